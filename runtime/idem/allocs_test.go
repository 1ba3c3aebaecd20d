//go:build !race

// Not built under the race detector, which allocates on its own (and
// under which sync.Pool drops items at random): make test runs this file's
// test without it.

package idem_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// TestWrapperAllocations holds the costs docs/BENCHMARKS.md reports for a
// call through a generated wrapper's shape on the memory store: a first
// execution at most 6 allocations (the goal is 10), and a
// replay none once its key has repeated (the key memo takes a key when a
// call finds it claimed, so the first replay derives it and the next ones
// do not).
func TestWrapperAllocations(t *testing.T) {
	ctx := context.Background()
	g := idem.NewGuard(memstore.New())
	spec := &idem.Spec{Name: "allocs.Count", TTL: time.Hour, Lease: time.Minute,
		Codec: idemimpl.TypedCodec[int64]{
			Encode: func(e *idemimpl.Encoder, v *int64) { e.Int(*v) },
			Decode: func(d *idemimpl.Decoder, v *int64) { *v = d.Int(64) },
		}}
	fn := func(context.Context) (int64, error) { return 1 << 40, nil }
	call := func(n int64) {
		c, k := idemimpl.Begin(g, spec)
		k.Key().Int(n)
		if _, err := idem.Do(ctx, c, fn); err != nil {
			t.Fatal(err)
		}
	}
	next := int64(1000)
	first := testing.AllocsPerRun(2000, func() { next++; call(next) })
	call(1)
	call(1) // the first replay: the key enters the memo
	replay := testing.AllocsPerRun(2000, func() { call(1) })
	if first > 6 || replay != 0 {
		t.Fatalf("allocations: first execution %.1f (want ≤ 6), replay %.1f (want 0)", first, replay)
	}
	t.Logf("allocations: first execution %.1f, replay %.1f", first, replay)
}
