package idem_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/memstore"
)

type memSample struct{ heap, stack int64 }

func memNow() memSample {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSample{int64(ms.HeapAlloc), int64(ms.StackInuse)}
}

var capacitySpec = &idem.Spec{Name: "capacity.Mem", Version: 1, Lease: time.Minute, TTL: time.Hour}

// TestGuardMemory measures, through a Guard over the memory store, the
// heap and stack of a call in flight (its function blocked) against the
// same number of bare goroutines blocked the same way, and the heap of a
// retained record written by the Guard (identity header and encoded
// result included). It fails if an in-flight call costs more than a
// bound that docs/CAPACITY.md states (8 KiB of heap beyond the bare
// goroutine: the call's state, its execution and heartbeat, the store's
// in-progress record). IDEM_CAPACITY_VERBOSE prints the numbers.
func TestGuardMemory(t *testing.T) {
	const n = 20_000
	ctx := context.Background()

	// Bare goroutines blocked on a channel: the baseline.
	release := make(chan struct{})
	var started, done sync.WaitGroup
	base := memNow()
	for range n {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			started.Done()
			<-release
		}()
	}
	started.Wait()
	bare := memNow()
	close(release)
	done.Wait()

	st := memstore.New()
	g := idem.NewGuard(st)
	release = make(chan struct{})
	before := memNow()
	for i := range n {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			c := g.Begin(capacitySpec, fmt.Sprintf("inflight-%d", i))
			_, err := idem.Do(ctx, c, func(context.Context) (string, error) {
				started.Done()
				<-release
				return "x", nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	started.Wait()
	inflight := memNow()
	close(release)
	done.Wait()

	perCallHeap := float64(inflight.heap-before.heap)/n - float64(bare.heap-base.heap)/n
	perCallStack := float64(inflight.stack-before.stack) / n
	bareStack := float64(bare.stack-base.stack) / n
	t.Logf("CAPACITY guard in-flight call: %.0f heap bytes beyond a bare blocked goroutine; stack %.0f bytes (a bare goroutine: %.0f); %d calls",
		perCallHeap, perCallStack, bareStack, n)
	if perCallHeap > 8<<10 {
		t.Errorf("an in-flight call takes %.0f heap bytes beyond its goroutine, over the 8 KiB docs/CAPACITY.md states", perCallHeap)
	}

	// Retained records written by the Guard: a fresh store, n completed calls.
	st2 := memstore.New()
	g2 := idem.NewGuard(st2)
	res := strings.Repeat("r", 32)
	m0 := memNow()
	for i := range n {
		c := g2.Begin(capacitySpec, fmt.Sprintf("retained-%d", i))
		if _, err := idem.Do(ctx, c, func(context.Context) (string, error) { return res, nil }); err != nil {
			t.Fatal(err)
		}
	}
	m1 := memNow()
	perRecord := float64(m1.heap-m0.heap) / n
	estimate := float64(st2.Bytes()) / n
	t.Logf("CAPACITY guard retained record (32-byte string result): %.0f heap bytes measured, %.0f estimated by the store; %d records",
		perRecord, estimate, st2.Len())
	if perRecord > estimate {
		t.Errorf("a retained record takes %.0f heap bytes but the store counts %.0f: WithMaxBytes would be exceeded", perRecord, estimate)
	}
	runtime.KeepAlive(g)
	runtime.KeepAlive(g2)
	runtime.KeepAlive(st)
}
