package idem_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/idemgen/idemgen/runtime/idem"
)

// order is the ~7 mixed-field struct of the key derivation benchmark.
type order struct {
	CustomerID string
	OrderID    string
	Amount     int64
	Items      []string
	Meta       map[string]string
	At         time.Time
	Rate       float64
}

var benchOrder = order{
	CustomerID: "cus_8f2a91",
	OrderID:    "ord_1029384756",
	Amount:     129900,
	Items:      []string{"sku-1", "sku-2", "sku-3"},
	Meta:       map[string]string{"channel": "web", "campaign": "autumn", "region": "eu-west"},
	At:         time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC),
	Rate:       0.21,
}

// keyOrder is what idemgen emits for order.
func keyOrder(b *idem.KeyBuilder, v *order) {
	b.String(v.CustomerID)
	b.String(v.OrderID)
	b.Int(v.Amount)
	if v.Items == nil {
		b.Nil()
	} else {
		b.List(len(v.Items))
		for _, e := range v.Items {
			b.String(e)
		}
	}
	if v.Meta == nil {
		b.Nil()
	} else {
		b.MapStart(len(v.Meta))
		for k, e := range v.Meta {
			b.MapEntry()
			b.String(k)
			b.String(e)
		}
		b.MapEnd()
	}
	b.Time(v.At)
	b.Float(v.Rate)
}

// measure times n iterations of a baseline body outside the benchmark
// timer, so each benchmark reports its ratio to a baseline measured in the
// same run, on the same machine state.
func measure(b *testing.B, n int, body func(n int)) time.Duration {
	b.StopTimer()
	defer b.StartTimer()
	n = max(n, 1000)
	start := time.Now()
	body(n)
	return time.Since(start) / time.Duration(n)
}

// reportRatio reports base/ours: how many times faster ours is.
func reportRatio(b *testing.B, unit string, base time.Duration) {
	b.StopTimer()
	ours := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(float64(base.Nanoseconds())/ours, unit)
	b.ReportMetric(float64(base.Nanoseconds()), "baseline-ns/op")
}

func jsonKeys(n int) {
	for i := 0; i < n; i++ {
		data, err := json.Marshal(&benchOrder)
		if err != nil {
			panic(err)
		}
		_ = sha256.Sum256(data)
	}
}

func benchJSONKey(b *testing.B) {
	b.ReportAllocs()
	jsonKeys(b.N)
}

// BenchmarkKeyDerivation compares idemgen's generated key code with the
// json.Marshal+SHA-256 approach of most idempotency libraries.
func BenchmarkKeyDerivation(b *testing.B) {
	b.Run("json_sha256", benchJSONKey)
	b.Run("idem", func(b *testing.B) {
		// Without the key memo: this measures deriving a key, every time.
		g := idem.NewGuard(idem.NewMemoryStore(), idem.WithKeyMemo(0))
		spec := &idem.Spec{Name: "bench.Key"}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			c := g.Begin(spec)
			keyOrder(c.Key(), &benchOrder)
			if _, err := idem.KeyOf(c); err != nil {
				b.Fatal(err)
			}
		}
		reportRatio(b, "x-json", measure(b, b.N, jsonKeys))
	})
	b.Run("idem_encode_only", func(b *testing.B) {
		// The encoding alone, against json.Marshal alone: where the time
		// goes when SHA-256 (shared by both) is taken out.
		var kb idem.KeyBuilder
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			kb.Reset()
			keyOrder(&kb, &benchOrder)
		}
		reportRatio(b, "x-json-marshal", measure(b, b.N, func(n int) {
			for i := 0; i < n; i++ {
				if _, err := json.Marshal(&benchOrder); err != nil {
					panic(err)
				}
			}
		}))
	})
}

type receipt struct {
	ID     string
	Amount int64
}

func singleflights(n int) {
	var sf singleflight.Group
	for i := 0; i < n; i++ {
		v, _, _ := sf.Do("cus_8f2a91/ord_1029384756", func() (any, error) { return &receipt{ID: "r"}, nil })
		_ = v.(*receipt)
	}
}

func benchSingleflight(b *testing.B) {
	b.ReportAllocs()
	singleflights(b.N)
}

func benchSyncMap(b *testing.B) {
	var m sync.Map
	m.Store("cus_8f2a91/ord_1029384756", &receipt{ID: "r"})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		v, _ := m.Load("cus_8f2a91/ord_1029384756")
		_ = v.(*receipt)
	}
}

// BenchmarkReplay is a full memory-store replay as a generated wrapper does
// it: key derivation, claim, typed result. Baselines: singleflight.Do and a
// sync.Map load, which do far less (no key derivation, no leases).
func BenchmarkReplay(b *testing.B) {
	b.Run("singleflight", benchSingleflight)
	b.Run("sync_map_load", benchSyncMap)
	b.Run("idem_memory", func(b *testing.B) {
		g := idem.NewGuard(idem.NewMemoryStore())
		spec := &idem.Spec{Name: "bench.Charge"}
		req := benchOrder
		charge := func(ctx context.Context) (*receipt, error) { return &receipt{ID: "r", Amount: req.Amount}, nil }
		ctx := context.Background()
		wrapper := func() (*receipt, error) {
			c := g.Begin(spec)
			c.Key().String(req.CustomerID)
			c.Key().String(req.OrderID)
			return idem.Do(ctx, c, charge)
		}
		if _, err := wrapper(); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := wrapper(); err != nil {
				b.Fatal(err)
			}
		}
		reportRatio(b, "x-singleflight", measure(b, b.N, singleflights))
	})
}

// BenchmarkFirstExecution claims, runs and completes a new key each time.
func BenchmarkFirstExecution(b *testing.B) {
	g := idem.NewGuard(idem.NewMemoryStore(idem.WithMaxRecords(1 << 30)))
	spec := &idem.Spec{Name: "bench.First"}
	ctx := context.Background()
	var n atomic.Int64
	fn := func(ctx context.Context) (*receipt, error) { return &receipt{ID: "r"}, nil }
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := g.Begin(spec)
		c.Key().Int(n.Add(1))
		if _, err := idem.Do(ctx, c, fn); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplayParallel is the replay under contention from all cores.
func BenchmarkReplayParallel(b *testing.B) {
	g := idem.NewGuard(idem.NewMemoryStore())
	spec := &idem.Spec{Name: "bench.Parallel"}
	fn := func(ctx context.Context) (*receipt, error) { return &receipt{ID: "r"}, nil }
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c := g.Begin(spec)
			c.Key().String("cus_8f2a91")
			if _, err := idem.Do(ctx, c, fn); err != nil {
				b.Fatal(err)
			}
		}
	})
}
