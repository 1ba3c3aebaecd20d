package idem

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/internal/impl"
)

// TestOwnRecord: the replay's in-place header check agrees with parsing
// the header, for every signature length. (A record is read only under
// its own name and version: they are in its key.)
func TestOwnRecord(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	spec := func() *Spec {
		return &Spec{
			Name:      strings.Repeat("n", []int{0, 1, 127, 128, 300}[r.IntN(5)]) + string(rune('a'+r.IntN(2))),
			Version:   []int{0, 1, 63, 64, -1, 1000}[r.IntN(6)],
			Signature: strings.Repeat("s", []int{0, 16, 127, 128, 300}[r.IntN(5)]) + []string{"", "a", "b"}[r.IntN(3)],
		}
	}
	for range 5000 {
		writer, reader := spec(), spec()
		if r.IntN(2) == 0 {
			reader = writer
		}
		data := append(appendHeader(nil, writer), "body"...)
		body, ok := impl.OwnRecord(reader.Signature, data)
		same := writer.Signature == reader.Signature
		if ok && (!same || string(body) != "body") {
			t.Fatalf("ownRecord(%+v) accepted a record of %+v: body %q", reader, writer, body)
		}
		got, err := checkRecord(reader, data)
		if same != (err == nil) || same && string(got) != "body" {
			t.Fatalf("checkRecord(%+v) of a record of %+v: %q, %v", reader, writer, got, err)
		}
	}
}
