package idemtest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// StreamFanOut benchmarks a stream's live fan-out on s, which must keep
// streams: readers callers of one key range its stream at once (the
// first to claim produces; the rest attach while it runs, and the
// producer starts only once they all have), streams of perStream items
// each. It reports the time per item delivered to all readers (ns/item),
// per item per reader (ns/item-reader), the same per item of the
// function's items handed to as many goroutines over channels without
// the Guard, measured alternately in the same run (unrecorded-ns/item),
// and the ratio of the first to the last (x-unrecorded). b.N counts
// items.
func StreamFanOut(b *testing.B, s idemstore.Store, readers, perStream int) {
	cs := &attachCounter{Store: s, Streamer: s.(idemstore.Streamer)}
	g := idem.NewGuard(cs)
	spec := &idem.Spec{Name: "bench.FanOut", Lease: time.Minute, TTL: time.Hour, OnDuplicate: idem.DuplicateWait}
	items := answerWords(perStream)
	produce := func(ctx context.Context, yield func(fanItem) bool) error {
		deadline := time.Now().Add(10 * time.Second)
		for cs.attached.Load() < int32(readers-1) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Microsecond)
		}
		return items(ctx, yield)
	}
	var tOurs, tBase time.Duration
	key := 0
	b.ResetTimer()
	for done := 0; done < b.N; done += perStream {
		t0 := time.Now()
		plainFanOut(b, readers, perStream, items)
		t1 := time.Now()
		key++
		cs.attached.Store(0)
		fanStream(b, g, spec, fmt.Sprint("fan-", key), readers, perStream, produce)
		tOurs += time.Since(t1)
		tBase += t1.Sub(t0)
	}
	b.StopTimer()
	delivered := float64((b.N + perStream - 1) / perStream * perStream)
	b.ReportMetric(float64(tOurs.Nanoseconds())/delivered, "ns/item")
	b.ReportMetric(float64(tOurs.Nanoseconds())/delivered/float64(readers), "ns/item-reader")
	b.ReportMetric(float64(tBase.Nanoseconds())/delivered, "unrecorded-ns/item")
	b.ReportMetric(float64(tOurs)/float64(tBase), "x-unrecorded")
}

// plainFanOut is the baseline: the function's items handed by one
// goroutine to readers goroutines over channels (as many items buffered
// as the Guard's producer buffers), nothing recorded.
func plainFanOut(b *testing.B, readers, perStream int, items func(context.Context, func(fanItem) bool) error) {
	chans := make([]chan fanItem, readers)
	var wg sync.WaitGroup
	for i := range chans {
		chans[i] = make(chan fanItem, 16)
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for range chans[i] {
				n++
			}
			if n != perStream {
				b.Errorf("a plain reader got %d items, want %d", n, perStream)
			}
		}()
	}
	_ = items(context.Background(), func(it fanItem) bool {
		for _, c := range chans {
			c <- it
		}
		return true
	})
	for _, c := range chans {
		close(c)
	}
	wg.Wait()
}

// fanItem is an item of the stream benchmarks' streams.
type fanItem struct {
	N    int
	Text string
}

// fanStream ranges key's stream with readers callers at once, each to its
// end, and fails b unless each got perStream items.
func fanStream(b *testing.B, g *idem.Guard, spec *idem.Spec, key string, readers, perStream int, produce func(context.Context, func(fanItem) bool) error) {
	var wg sync.WaitGroup
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for _, err := range idem.Stream(context.Background(), g.Begin(spec, key), produce) {
				if err != nil {
					b.Error(err)
					return
				}
				n++
			}
			if n != perStream {
				b.Errorf("a reader got %d items, want %d", n, perStream)
			}
		}()
	}
	wg.Wait()
}

// attachCounter counts the claims that found the key in progress: the
// readers that attach.
type attachCounter struct {
	idemstore.Store
	idemstore.Streamer
	attached atomic.Int32
}

func (c *attachCounter) Claim(ctx context.Context, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	res, err := c.Store.Claim(ctx, req)
	if err == nil && res.Status == idemstore.ClaimInProgress {
		c.attached.Add(1)
	}
	return res, err
}

// InProcess is the wrapped store's: the counter waits on nothing.
func (c *attachCounter) InProcess() bool {
	p, ok := c.Store.(interface{ InProcess() bool })
	return ok && p.InProcess()
}
