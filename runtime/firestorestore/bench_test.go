package firestorestore_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/firestorestore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

type benchInvoice struct {
	ID       string   `json:"id"`
	Customer string   `json:"customer"`
	Amount   int64    `json:"amount"`
	Currency string   `json:"currency"`
	Lines    []string `json:"lines"`
}

// interleave calls base(i) and op(i), in alternating order, for i < n,
// spread over callers goroutines, and returns the mean latency of each. Alternating the two
// exposes both to the same emulator and machine load, which on a shared
// machine moves far more than the difference being measured.
func interleave(callers, n int, base, op func(i int)) (baseMean, opMean time.Duration) {
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
				// ran measurably faster (a warm connection), which favoured
				// whichever was second.
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

// BenchmarkFirestoreStore measures, through idem.Guard and idem.Do against
// the emulator, at 1 and 32 concurrent callers: a replay (one Get) paired
// with a raw DocumentRef.Get of a record document, and a first execution
// (Get, Create, Update; WithCreateFirst: Create, Update) paired with a raw
// DocumentRef.Create of a fresh document. call_ns/op and base_ns/op are
// the mean latencies of each, x_base their ratio. (The ns/op column times
// a pair.)
func BenchmarkFirestoreStore(b *testing.B) {
	c := emulator(b)
	ctx := context.Background()
	for _, mode := range []struct {
		name string
		opts []firestorestore.Option
	}{{"read_first", nil}, {"create_first", []firestorestore.Option{firestorestore.WithCreateFirst()}}} {
		s := newStore(b, c, mode.opts...)
		g := idem.NewGuard(s)
		spec := &idem.Spec{Name: "firestorestore_bench.CreateInvoice", Lease: 30 * time.Second, TTL: time.Hour}
		inv := benchInvoice{ID: "inv_1", Customer: "cus_42", Amount: 1250, Currency: "EUR", Lines: []string{"seat", "support"}}
		do := func(key string) {
			call := g.Begin(spec, key)
			if _, err := idem.Do(ctx, call, func(ctx context.Context) (benchInvoice, error) { return inv, nil }); err != nil {
				b.Error(err)
			}
		}
		const stored = 64
		for i := range stored {
			do("replay-" + strconv.Itoa(i))
		}
		docs, err := s.Collection().Documents(ctx).GetAll()
		if err != nil || len(docs) == 0 {
			b.Fatalf("record documents: %d, %v", len(docs), err)
		}
		rawGet := func(i int) {
			if _, err := docs[i%len(docs)].Ref.Get(ctx); err != nil {
				b.Error(err)
			}
		}
		scratch := c.Collection(s.Collection().ID + "_raw")
		var fresh, rawSeq atomic.Int64
		rawCreate := func(int) {
			_, err := scratch.Doc("d"+strconv.FormatInt(rawSeq.Add(1), 10)).Create(ctx, map[string]any{"v": int64(1), "res": []byte("x")})
			if err != nil {
				b.Error(err)
			}
		}
		runID := strconv.FormatInt(time.Now().UnixNano(), 36)
		for _, callers := range []int{1, 32} {
			for _, bc := range []struct {
				name     string
				base, op func(i int)
			}{
				{"replay_vs_Get", rawGet, func(i int) { do("replay-" + strconv.Itoa(i%stored)) }},
				{"first_execution_vs_Create", rawCreate, func(int) { do("first-" + runID + "-" + strconv.FormatInt(fresh.Add(1), 10)) }},
			} {
				b.Run(fmt.Sprintf("%s/%s/callers=%d", mode.name, bc.name, callers), func(b *testing.B) {
					b.ResetTimer()
					base, took := interleave(callers, b.N, bc.base, bc.op)
					b.StopTimer()
					b.ReportMetric(float64(took.Nanoseconds()), "call_ns/op")
					b.ReportMetric(float64(base.Nanoseconds()), "base_ns/op")
					b.ReportMetric(float64(took)/float64(base), "x_base")
				})
			}
		}
	}
}

// BenchmarkWaitWakeup measures how soon a waiter blocked in Wait (on the
// snapshot listener; fallback polling at 1s, the default cap) returns
// after the owner's Complete returns: the p50 and p99 over b.N keys, and
// Complete's own mean latency as the baseline (x_complete: p50 wake-up
// over it).
func BenchmarkWaitWakeup(b *testing.B) {
	c := emulator(b)
	ctx := context.Background()
	s, err := firestorestore.New(ctx, c, collection(b))
	if err != nil {
		b.Fatal(err)
	}
	wakes := make([]time.Duration, 0, b.N)
	var completeSum time.Duration
	b.ResetTimer()
	for i := range b.N {
		key := "w" + strconv.Itoa(i)
		res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{1}, Lease: time.Minute, TTL: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		woke := make(chan time.Time, 1)
		go func() {
			if err := s.Wait(ctx, key); err != nil {
				b.Error(err)
			}
			woke <- time.Now()
		}()
		time.Sleep(100 * time.Millisecond) // the waiter is listening
		t0 := time.Now()
		if err := s.Complete(ctx, idemstore.Lease{Key: key, Owner: idemstore.Token{1}, Fence: res.Fence, TTL: time.Hour}, idemstore.Result{Data: []byte("ok")}); err != nil {
			b.Fatal(err)
		}
		done := time.Now()
		completeSum += done.Sub(t0)
		wakes = append(wakes, max((<-woke).Sub(done), 0))
	}
	b.StopTimer()
	slices.Sort(wakes)
	p := func(q float64) time.Duration { return wakes[min(int(q*float64(len(wakes))), len(wakes)-1)] }
	mean := completeSum / time.Duration(b.N)
	b.ReportMetric(float64(p(0.50).Nanoseconds()), "wake_p50_ns")
	b.ReportMetric(float64(p(0.99).Nanoseconds()), "wake_p99_ns")
	b.ReportMetric(float64(mean.Nanoseconds()), "Complete_ns/op")
	b.ReportMetric(float64(p(0.50))/float64(mean), "x_complete")
}
