package idem_test

import (
	"context"
	"fmt"
	"iter"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// BenchmarkStreamItem is the cost of one item of a recorded stream on the
// memory store, as a ratio to the same function's items ranged without
// the Guard (x-unrecorded: a recorded item takes that many times as
// long), alternated in one run. Both are pulled one item at a time
// (iter.Pull2), from streams of 10,000 items:
//
//   - recorded: the first caller's items: each encoded (JSON), appended
//     to the store and handed over from the producer's goroutine;
//   - replayed: a duplicate's items after the stream completed, read
//     back in batches and decoded.
func BenchmarkStreamItem(b *testing.B) {
	const perStream = 10_000
	ctx := context.Background()
	produce := func(ctx context.Context, yield func(word) bool) error {
		for i := range perStream {
			if !yield(word{i, "a word of a model's answer"}) {
				return nil
			}
		}
		return nil
	}
	plain := func(yield func(word, error) bool) {
		_ = produce(ctx, func(t word) bool { return yield(t, nil) })
	}
	store := memstore.New()
	g := idem.NewGuard(store)
	spec := &idem.Spec{Name: "bench.Stream", Lease: time.Minute, TTL: time.Hour}
	key := 0
	recorded := func() iter.Seq2[word, error] {
		key++
		return idem.Stream(ctx, g.Begin(spec, key), produce)
	}
	for range idem.Stream(ctx, g.Begin(spec, "done"), produce) { // the stream the replays read
	}
	replayed := func() iter.Seq2[word, error] { return idem.Stream(ctx, g.Begin(spec, "done"), produce) }
	unrecorded := func() iter.Seq2[word, error] { return plain }
	b.Run("recorded", func(b *testing.B) {
		streamRatio(b, idemtest.PullItems(perStream, recorded, func() { _ = store.Delete(ctx, lastKey(g, spec, key)) }), idemtest.PullItems(perStream, unrecorded, nil))
	})
	b.Run("replayed", func(b *testing.B) {
		streamRatio(b, idemtest.PullItems(perStream, replayed, nil), idemtest.PullItems(perStream, unrecorded, nil))
	})
}

// lastKey is the store key of the stream numbered key.
func lastKey(g *idem.Guard, spec *idem.Spec, key int) string {
	k, err := g.Begin(spec, key).StoreKey()
	if err != nil {
		panic(err)
	}
	return k
}

// streamRatio runs ours and base alternately and reports their time per
// item and ours' over base's.
func streamRatio(b *testing.B, ours, base func(n int)) {
	tOurs, tBase := alternate(b, ours, base)
	b.ReportMetric(float64(tOurs.Nanoseconds())/float64(b.N), "ns/item")
	b.ReportMetric(float64(tBase.Nanoseconds())/float64(b.N), "unrecorded-ns/item")
	b.ReportMetric(float64(tOurs)/float64(tBase), "x-unrecorded")
}

// BenchmarkStreamFanOut is the cost of an item of a recorded stream on
// the memory store delivered live to readers callers at once (the
// producer's and the duplicates attached while it runs), as a ratio to
// the same function's item ranged once without the Guard
// (idemtest.StreamFanOut), from streams of 2,000 items.
func BenchmarkStreamFanOut(b *testing.B) {
	for _, readers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("readers=%d", readers), func(b *testing.B) {
			idemtest.StreamFanOut(b, memstore.New(), readers, 2_000)
		})
	}
}
