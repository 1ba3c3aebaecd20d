package idemtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
)

// overlongKeyBytes is longer than any store's key limit we know of
// (DynamoDB 2048 bytes, Firestore 1500, a Postgres B-tree entry about
// 2700) even after compression: the name is random hex.
const overlongKeyBytes = 16 << 10

// testOverlongKeyNeverFailsOpen: a key longer than the store can hold is
// a property of the call, not an outage, so a fail-open Guard must not
// run the function for it. A store either holds the key (the function
// runs once and duplicates replay) or says idem.ErrInvalidKey on every
// call, before anything runs; never an unavailability that fail-open
// would ride out by running the function on every call.
func testOverlongKeyNeverFailsOpen(t *testing.T, e *env) {
	b := make([]byte, overlongKeyBytes/2)
	_, _ = rand.Read(b)
	spec := &idem.Spec{Name: "idemtest.Overlong" + hex.EncodeToString(b), Lease: 30 * time.Second, TTL: time.Hour}
	var runs atomic.Int64
	fn := func(context.Context) (any, error) { runs.Add(1); return "ran", nil }
	g := idem.NewGuard(e.s, idem.WithFailOpen())
	var invalid int
	for i := 0; i < 3; i++ {
		v, err := e.guardCall(ctx, g, spec, "k", fn)
		switch {
		case errors.Is(err, idem.ErrInvalidKey):
			invalid++
		case err != nil:
			t.Fatalf("call %d with a %d-byte name: err = %v, want nil (the store holds it) or ErrInvalidKey", i, len(spec.Name), err)
		case v != "ran":
			t.Fatalf("call %d: value %v, want %q", i, v, "ran")
		}
	}
	switch n := runs.Load(); {
	case invalid == 3 && n == 0:
		t.Logf("%T refuses a %d-byte name as an invalid key", e.s, len(spec.Name))
	case invalid == 0 && n == 1:
		t.Logf("%T holds a %d-byte name", e.s, len(spec.Name))
	default:
		t.Errorf("%d of 3 calls got ErrInvalidKey and fn ran %d times; want all three refused and 0 runs, or none refused and 1 run", invalid, n)
	}
}
