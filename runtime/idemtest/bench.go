package idemtest

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Invoice is the result the store benchmarks record: a small JSON object
// the size of a typical API response, so that every store is measured on
// the same payload.
type Invoice struct {
	ID       string   `json:"id"`
	Customer string   `json:"customer"`
	Amount   int64    `json:"amount"`
	Currency string   `json:"currency"`
	Lines    []string `json:"lines"`
}

// InvoiceCall returns a function that makes one call of spec under key
// through g, its body returning a fixed Invoice; an error is reported on
// tb without stopping, as benchmark goroutines may call it.
func InvoiceCall(tb testing.TB, g *idem.Guard, spec *idem.Spec) func(key string) {
	inv := Invoice{ID: "inv_1", Customer: "cus_42", Amount: 1250, Currency: "EUR", Lines: []string{"seat", "support"}}
	return func(key string) {
		call := g.Begin(spec, key)
		if _, err := idem.Do(context.Background(), call, func(context.Context) (Invoice, error) { return inv, nil }); err != nil {
			tb.Error(err)
		}
	}
}

// Interleave calls base(i) and op(i), in alternating order, for i < n,
// spread over callers goroutines, and returns the mean latency of each.
// Pairing the two exposes both to the same server and machine load, which
// on a shared machine moves far more than the difference being measured.
func Interleave(callers, n int, base, op func(i int)) (baseMean, opMean time.Duration) {
	var next, baseSum, opSum atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				// Alternate which goes first: the second request of a pair
				// runs measurably faster (a warm connection), which would
				// favour whichever is always second.
				first, second, fs, ss := base, op, &baseSum, &opSum
				if i%2 == 1 {
					first, second, fs, ss = op, base, &opSum, &baseSum
				}
				t0 := time.Now()
				first(i)
				t1 := time.Now()
				second(i)
				fs.Add(int64(t1.Sub(t0)))
				ss.Add(int64(time.Since(t1)))
			}
		}()
	}
	wg.Wait()
	return time.Duration(baseSum.Load() / int64(n)), time.Duration(opSum.Load() / int64(n))
}

// Alternate runs base and then ours, 64 operations at a time, until b.N
// of each are done, and returns the time each took: the two see the same
// machine load, which on a shared machine moves more than the difference
// being measured. Only the chunks are timed.
func Alternate(b *testing.B, ours, base func(n int)) (tOurs, tBase time.Duration) {
	const chunk = 64
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		t0 := time.Now()
		base(n)
		t1 := time.Now()
		ours(n)
		tOurs += time.Since(t1)
		tBase += t1.Sub(t0)
	}
	b.StopTimer()
	return tOurs, tBase
}

// RunVersus runs b.N pairs of base and op through Interleave at callers
// goroutines and reports call_ns/op (op's mean), <baseName>_ns/op (base's
// mean) and x_<baseName> (their ratio). The ns/op column times a pair.
func RunVersus(b *testing.B, callers int, baseName string, base, op func(i int)) {
	b.ResetTimer()
	baseMean, took := Interleave(callers, b.N, base, op)
	b.StopTimer()
	b.ReportMetric(float64(took.Nanoseconds()), "call_ns/op")
	b.ReportMetric(float64(baseMean.Nanoseconds()), fmt.Sprintf("%s_ns/op", baseName))
	b.ReportMetric(float64(took)/float64(baseMean), "x_"+baseName)
}

// WakeupTimes runs b.N rounds of a wake-up benchmark: begin(i) claims a
// fresh key and returns it with the Complete that finishes it; a goroutine
// blocks in wait(key); once listening(key) has returned (the waiter is
// blocked), complete runs. It returns, per round, the time from the start
// of complete and from its return to wait's return (never below zero),
// sorted. Only the rounds are timed.
func WakeupTimes(b *testing.B, begin func(i int) (key string, complete func() error), wait func(key string) error, listening func(key string)) (fromStart, afterDone []time.Duration) {
	fromStart = make([]time.Duration, 0, b.N)
	afterDone = make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		key, complete := begin(i)
		woke := make(chan time.Time, 1)
		go func() {
			if err := wait(key); err != nil {
				b.Error(err)
			}
			woke <- time.Now()
		}()
		listening(key)
		start := time.Now()
		if err := complete(); err != nil {
			b.Fatal(err)
		}
		done := time.Now()
		w := <-woke
		fromStart = append(fromStart, w.Sub(start))
		afterDone = append(afterDone, max(w.Sub(done), 0))
	}
	b.StopTimer()
	slices.Sort(fromStart)
	slices.Sort(afterDone)
	return fromStart, afterDone
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of sorted, which must not be
// empty.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	return sorted[min(int(q*float64(len(sorted))), len(sorted)-1)]
}

// SleepCall returns a function that makes one call of spec under id
// through g whose body sleeps d and returns "r-"+id: a call that holds its
// lease for d, for tests that count a store's round trips per call.
func SleepCall(g *idem.Guard) func(spec *idem.Spec, id string, d time.Duration) (string, error) {
	return func(spec *idem.Spec, id string, d time.Duration) (string, error) {
		return idem.Do(context.Background(), g.Begin(spec, id), func(context.Context) (string, error) {
			time.Sleep(d)
			return "r-" + id, nil
		})
	}
}

// PullItems returns a function that pulls n items, one at a time
// (iter.Pull2), from the streams next makes, each of perStream items, one
// stream after another; done (if any) runs after each stream ended. It
// panics on an error, on a stream that ends early, and on one with more
// than perStream items: stream benchmarks time it per item.
func PullItems[T any](perStream int, next func() iter.Seq2[T, error], done func()) func(n int) {
	var pull func() (T, error, bool)
	var stop func()
	left := 0
	return func(n int) {
		for range n {
			if left == 0 {
				if pull != nil {
					if _, err, ok := pull(); ok {
						panic(fmt.Sprintf("a stream past its %d items: %v", perStream, err))
					}
					stop()
					if done != nil {
						done()
					}
				}
				pull, stop = iter.Pull2(next())
				left = perStream
			}
			if _, err, ok := pull(); !ok || err != nil {
				panic(fmt.Sprintf("a stream ended after %d of its %d items: %v", perStream-left, perStream, err))
			}
			left--
		}
	}
}

// StreamItemRatio runs ours and base in alternating chunks of 64 items
// (Interleave, one caller) for b.N items, and reports their time per item
// ("ns/item", "unrecorded-ns/item") and ours' over base's
// ("x-unrecorded"): a store's stream benchmark, base the items ranged
// without the Guard.
func StreamItemRatio(b *testing.B, ours, base func(n int)) {
	const chunk = 64
	chunks := (b.N + chunk - 1) / chunk
	b.ResetTimer()
	tBase, tOurs := Interleave(1, chunks, func(int) { base(chunk) }, func(int) { ours(chunk) })
	b.StopTimer()
	b.ReportMetric(float64(tOurs.Nanoseconds())/chunk, "ns/item")
	b.ReportMetric(float64(tBase.Nanoseconds())/chunk, "unrecorded-ns/item")
	b.ReportMetric(float64(tOurs)/float64(tBase), "x-unrecorded")
}

// answerWords returns a stream function of the benchmarks: it yields n
// items, a word of a model's answer each.
func answerWords(n int) func(context.Context, func(fanItem) bool) error {
	return func(ctx context.Context, yield func(fanItem) bool) error {
		for i := range n {
			if !yield(fanItem{i, "a word of a model's answer"}) {
				return nil
			}
		}
		return nil
	}
}

// BenchStreamItem is a store's stream benchmark: the cost of one item of
// a recorded stream through a Guard on s (one caller), as a ratio to the
// same function's items ranged without the Guard, alternated in chunks
// (StreamItemRatio), pulled one at a time from streams of perStream
// items. Its sub-benchmarks: recorded, the first caller's items (each
// encoded and appended; each stream's record is deleted once it ended);
// replayed, a duplicate's items after the stream
// completed (read back in batches and decoded).
func BenchStreamItem(b *testing.B, s idemstore.Store, perStream int) {
	ctx := context.Background()
	g := idem.NewGuard(s)
	spec := &idem.Spec{Name: "bench.Stream", Lease: time.Minute, TTL: time.Hour}
	produce := answerWords(perStream)
	plain := func(yield func(fanItem, error) bool) {
		_ = produce(ctx, func(w fanItem) bool { return yield(w, nil) })
	}
	key := 0
	recorded := func() iter.Seq2[fanItem, error] {
		key++
		return idem.Stream(ctx, g.Begin(spec, key), produce)
	}
	for range idem.Stream(ctx, g.Begin(spec, "done"), produce) { // the stream the replays read
	}
	replayed := func() iter.Seq2[fanItem, error] { return idem.Stream(ctx, g.Begin(spec, "done"), produce) }
	unrecorded := func() iter.Seq2[fanItem, error] { return plain }
	dropLast := func() { // a recorded stream, once it ended: the store does not grow
		if k, err := g.Begin(spec, key).StoreKey(); err == nil {
			_ = s.Delete(ctx, k)
		}
	}
	b.Run("recorded", func(b *testing.B) {
		StreamItemRatio(b, PullItems(perStream, recorded, dropLast), PullItems(perStream, unrecorded, nil))
	})
	b.Run("replayed", func(b *testing.B) {
		StreamItemRatio(b, PullItems(perStream, replayed, nil), PullItems(perStream, unrecorded, nil))
	})
}
