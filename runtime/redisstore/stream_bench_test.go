package redisstore

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

// streamWord is an item of the benchmark's streams, as runtime/idem's
// BenchmarkStreamItem streams.
type streamWord struct {
	N    int
	Text string
}

// BenchmarkStreamItem is the cost of one item of a recorded stream on
// Redis (standalone, one caller), as a ratio to the same function's items
// ranged without the Guard (x-unrecorded: a recorded item takes that
// many times as long), alternated in chunks of 64 items in one run, pulled one item
// at a time (iter.Pull2) from streams of 1,000 items:
//
//   - recorded: the first caller's items, each encoded and appended (one
//     script round trip per item);
//   - replayed: a duplicate's items after the stream completed, read back
//     in batches (one round trip per 256 items) and decoded.
func BenchmarkStreamItem(b *testing.B) {
	const perStream = 1_000
	ctx := context.Background()
	s := newStore(b, standalone(b))
	g := idem.NewGuard(s)
	spec := &idem.Spec{Name: "bench.Stream", Lease: time.Minute, TTL: time.Hour}
	produce := func(ctx context.Context, yield func(streamWord) bool) error {
		for i := range perStream {
			if !yield(streamWord{i, "a word of a model's answer"}) {
				return nil
			}
		}
		return nil
	}
	plain := func(yield func(streamWord, error) bool) {
		_ = produce(ctx, func(w streamWord) bool { return yield(w, nil) })
	}
	key := 0
	recorded := func() iter.Seq2[streamWord, error] {
		key++
		return idem.Stream(ctx, g.Begin(spec, key), produce)
	}
	for range idem.Stream(ctx, g.Begin(spec, "done"), produce) { // the stream the replays read
	}
	replayed := func() iter.Seq2[streamWord, error] { return idem.Stream(ctx, g.Begin(spec, "done"), produce) }
	unrecorded := func() iter.Seq2[streamWord, error] { return plain }
	b.Run("recorded", func(b *testing.B) {
		streamRatio(b, idemtest.PullItems(perStream, recorded, nil), idemtest.PullItems(perStream, unrecorded, nil))
	})
	b.Run("replayed", func(b *testing.B) {
		streamRatio(b, idemtest.PullItems(perStream, replayed, nil), idemtest.PullItems(perStream, unrecorded, nil))
	})
}

// streamRatio runs ours and base in alternating chunks of 64 items
// (idemtest.Interleave, one caller) for b.N items, and reports their
// time per item and ours' over base's.
func streamRatio(b *testing.B, ours, base func(n int)) {
	const chunk = 64
	chunks := (b.N + chunk - 1) / chunk
	b.ResetTimer()
	tBase, tOurs := idemtest.Interleave(1, chunks, func(int) { base(chunk) }, func(int) { ours(chunk) })
	b.StopTimer()
	b.ReportMetric(float64(tOurs.Nanoseconds())/chunk, "ns/item")
	b.ReportMetric(float64(tBase.Nanoseconds())/chunk, "unrecorded-ns/item")
	b.ReportMetric(float64(tOurs)/float64(tBase), "x-unrecorded")
}
