package filestore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/memstore"
)

type receipt struct {
	ID     string
	Amount int64
}

var benchSpec = idem.Spec{Name: "bench.Charge", TTL: time.Hour}

func charge(context.Context) (*receipt, error) { return &receipt{ID: "r_123", Amount: 129900}, nil }

// doKey is a generated wrapper's work for one call with an int key.
func doKey(g *idem.Guard, key int64) error {
	c, k := idemimpl.Begin(g, &benchSpec)
	k.Key().String("cus_8f2a91")
	k.Key().Int(key)
	_, err := idem.Do(context.Background(), c, charge)
	return err
}

// replays replays one stored key n times and returns the time per call.
func replays(b *testing.B, g *idem.Guard, n int) time.Duration {
	if err := doKey(g, 0); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for range n {
		if err := doKey(g, 0); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start) / time.Duration(n)
}

var firstKeys atomic.Int64

// firsts runs n first executions (claim, run, complete) of fresh keys.
func firsts(b *testing.B, g *idem.Guard, n int) time.Duration {
	start := time.Now()
	for range n {
		k := firstKeys.Add(1)
		if err := doKey(g, k); err != nil {
			b.Fatalf("key %d: %v", k, err)
		}
	}
	return time.Since(start) / time.Duration(n)
}

// memoryBaseline measures op on the memory store, outside the timer, in
// the same run as the file store numbers it is compared with. It uses a
// fresh store per 1000 calls: the memory store's periodic sweep (every
// 1024th claim) can drop a claim being made on the swept shard, which
// would fail the run (reported to the runtime/idem owner).
func memoryBaseline(b *testing.B, op func(*testing.B, *idem.Guard, int) time.Duration) time.Duration {
	b.StopTimer()
	defer b.StartTimer()
	var total time.Duration
	const batches, per = 20, 1000
	for i := range batches + 1 {
		g := idem.NewGuard(memstore.New())
		d := op(b, g, per-1)
		if i > 0 { // the first batch warms up
			total += d
		}
	}
	return total / batches
}

// report adds the ratio to the memory store measured in this run.
func report(b *testing.B, base time.Duration) {
	b.StopTimer()
	ours := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(ours/float64(base.Nanoseconds()), "x-memory")
	b.ReportMetric(float64(base.Nanoseconds()), "memory-ns/op")
}

// floorOnce does the least any crash-safe file store must do for a first
// execution on this filesystem and returns how long it took: two atomic
// replacements of a small file (write a temp file, fsync it, rename it
// over, fsync the directory; without the fsyncs for nosync), as the claim
// and the completion each need one.
func floorOnce(b *testing.B, dir string, i int, sync bool) time.Duration {
	data := make([]byte, 200)
	name := filepath.Join(dir, fmt.Sprintf("floor-%d", i))
	start := time.Now()
	for range 2 {
		f, err := os.OpenFile(name+".tmp", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		f.Write(data)
		if sync {
			f.Sync()
		}
		f.Close()
		if err := os.Rename(name+".tmp", name); err != nil {
			b.Fatal(err)
		}
		if sync {
			d, _ := os.Open(dir)
			d.Sync()
			d.Close()
		}
	}
	return time.Since(start)
}

func benchStore(b *testing.B, opts ...Option) *idem.Guard {
	s, err := New(b.TempDir(), opts...)
	if err != nil {
		b.Fatal(err)
	}
	return idem.NewGuard(s)
}

// BenchmarkFileStore measures, through idem.Do as a generated wrapper calls
// it, a replay (one unlocked read of the record file) and a first
// execution (claim and complete: two locked temp-file writes and renames,
// each with a file and a directory fsync unless WithoutSync), with and
// without fsync. x-memory is the time per call over the memory store's;
// x-floor (first executions) is the time over two bare atomic file
// replacements on the same filesystem, both measured in the same run.
func BenchmarkFileStore(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts []Option
	}{{"fsync", nil}, {"nosync", []Option{WithoutSync()}}} {
		b.Run("replay/"+mode.name, func(b *testing.B) {
			g := benchStore(b, mode.opts...)
			b.ReportAllocs()
			b.ResetTimer()
			replays(b, g, b.N)
			report(b, memoryBaseline(b, replays))
		})
		b.Run("first/"+mode.name, func(b *testing.B) {
			g := benchStore(b, mode.opts...)
			floorDir := b.TempDir()
			var floor time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := doKey(g, firstKeys.Add(1)); err != nil {
					b.Fatal(err)
				}
				// Interleaved, so the machine's load drifts alike for both.
				b.StopTimer()
				floor += floorOnce(b, floorDir, i, mode.opts == nil)
				b.StartTimer()
			}
			b.StopTimer()
			ours := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(ours/(float64(floor.Nanoseconds())/float64(b.N)), "x-floor")
			report(b, memoryBaseline(b, firsts))
		})
	}
}

// BenchmarkFileStoreReplayParallel is the replay under contention from all
// cores (every goroutine on the same key).
func BenchmarkFileStoreReplayParallel(b *testing.B) {
	g := benchStore(b)
	if err := doKey(g, 0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := doKey(g, 0); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
