package firestorestore_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/firestorestore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

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
		spec := &idem.Spec{Name: "firestorestore_bench.CreateInvoice", Lease: 30 * time.Second, TTL: time.Hour}
		do := idemtest.InvoiceCall(b, idem.NewGuard(s), spec)
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
					idemtest.RunVersus(b, callers, "base", bc.base, bc.op)
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
	var completeSum time.Duration
	begin := func(i int) (string, func() error) {
		key := "w" + strconv.Itoa(i)
		res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{1}, Lease: time.Minute, TTL: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		return key, func() error {
			t0 := time.Now()
			defer func() { completeSum += time.Since(t0) }()
			return s.Complete(ctx, idemstore.Lease{Key: key, Owner: idemstore.Token{1}, Fence: res.Fence, TTL: time.Hour}, idemstore.Result{Data: []byte("ok")})
		}
	}
	wait := func(key string) error { return s.Wait(ctx, key) }
	// The waiter is listening after a pause: the listener has no hook to ask.
	_, wakes := idemtest.WakeupTimes(b, begin, wait, func(string) { time.Sleep(100 * time.Millisecond) })
	p := func(q float64) time.Duration { return idemtest.Quantile(wakes, q) }
	mean := completeSum / time.Duration(b.N)
	b.ReportMetric(float64(p(0.50).Nanoseconds()), "wake_p50_ns")
	b.ReportMetric(float64(p(0.99).Nanoseconds()), "wake_p99_ns")
	b.ReportMetric(float64(mean.Nanoseconds()), "Complete_ns/op")
	b.ReportMetric(float64(p(0.50))/float64(mean), "x_complete")
}
