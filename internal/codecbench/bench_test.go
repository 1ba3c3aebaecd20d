package codecbench

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGeneratedCodecRoundTrip(t *testing.T) {
	v := Sample("o1")
	data, err := idemSpecPlace.Codec.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var got *Order
	if err := idemSpecPlace.Codec.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v, got); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
}

// BenchmarkReplayDecode decodes the stored bytes of a ~20-field nested
// result, as a replay does, by the generated codec and by encoding/json
// (the Guard's default codec), in one run:
//
//	go test ./internal/codecbench -run '^$' -bench ReplayDecode -benchmem
func BenchmarkReplayDecode(b *testing.B) {
	v := Sample("o1")
	gen, err := idemSpecPlace.Codec.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	js, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("generated", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(gen)))
		for b.Loop() {
			var o *Order
			if err := idemSpecPlace.Codec.Unmarshal(gen, &o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(js)))
		for b.Loop() {
			var o *Order
			if err := json.Unmarshal(js, &o); err != nil {
				b.Fatal(err)
			}
		}
	})
}
