package codecbench

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// FuzzGeneratedDecode feeds arbitrary bytes to a generated decoder: it
// never panics, fails only with ErrCorruptRecord or ErrResultIncompatible,
// and what it decodes encodes again to a record that decodes to the same
// value.
//
//	go test ./internal/codecbench -run '^$' -fuzz FuzzGeneratedDecode -fuzztime 1m
func FuzzGeneratedDecode(f *testing.F) {
	for _, o := range []*Order{Sample("o1"), {}, nil, {Lines: []Line{}, Meta: map[string]string{}, Ref: []byte{}}} {
		data, err := idemSpecPlace.Codec.Marshal(o)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte{idemimpl.CodecMarker, idemimpl.CodecVersion})
	f.Fuzz(func(t *testing.T, data []byte) {
		var o *Order
		if err := idemSpecPlace.Codec.Unmarshal(data, &o); err != nil {
			if !errors.Is(err, idem.ErrCorruptRecord) && !errors.Is(err, idem.ErrResultIncompatible) {
				t.Fatalf("error %v is neither ErrCorruptRecord nor ErrResultIncompatible", err)
			}
			return
		}
		again, err := idemSpecPlace.Codec.Marshal(o)
		if err != nil {
			return // a decoded time.Time can hold an offset MarshalBinary refuses
		}
		var p *Order
		if err := idemSpecPlace.Codec.Unmarshal(again, &p); err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		bits := cmp.Comparer(func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) })
		if diff := cmp.Diff(o, p, bits); diff != "" {
			t.Fatalf("round trip differs:\n%s", diff)
		}
	})
}
