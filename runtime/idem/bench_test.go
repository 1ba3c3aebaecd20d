package idem_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
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
func keyOrder(b *idemimpl.KeyBuilder, v *order) {
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

// interleave runs ours and base alternately in short chunks until b.N
// operations of each are done, and reports both per-operation times and
// base/ours ("how many times faster than the baseline"). Alternating
// keeps a machine whose load swings from favouring either side.
func interleave(b *testing.B, unit string, ours, base func(n int)) {
	tOurs, tBase := idemtest.Alternate(b, ours, base)
	b.ReportMetric(float64(tOurs.Nanoseconds())/float64(b.N), "idem-ns/op")
	b.ReportMetric(float64(tBase.Nanoseconds())/float64(b.N), "base-ns/op")
	b.ReportMetric(float64(tBase)/float64(tOurs), unit)
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

// BenchmarkKeyDerivation compares idemgen's generated key code with the
// json.Marshal+SHA-256 approach of most idempotency libraries. The key
// memo is off: this is the cost of deriving a key from scratch.
func BenchmarkKeyDerivation(b *testing.B) {
	g := idem.NewGuard(memstore.New(), idem.WithKeyMemo(0))
	spec := &idem.Spec{Name: "bench.Key"}
	derive := func(n int) {
		for i := 0; i < n; i++ {
			c, k := idemimpl.Begin(g, spec)
			keyOrder(k.Key(), &benchOrder)
			if _, err := c.StoreKey(); err != nil {
				panic(err)
			}
		}
	}
	var kb idemimpl.KeyBuilder
	encode := func(n int) {
		for i := 0; i < n; i++ {
			kb.Reset()
			keyOrder(&kb, &benchOrder)
		}
	}
	marshal := func(n int) {
		for i := 0; i < n; i++ {
			if _, err := json.Marshal(&benchOrder); err != nil {
				panic(err)
			}
		}
	}
	b.Run("idem", func(b *testing.B) { b.ReportAllocs(); derive(b.N) })
	b.Run("json_sha256", func(b *testing.B) { b.ReportAllocs(); jsonKeys(b.N) })
	b.Run("ratio", func(b *testing.B) { interleave(b, "x-json-sha256", derive, jsonKeys) })
	// Without SHA-256, which both sides pay: the encodings alone.
	b.Run("encode_ratio", func(b *testing.B) { interleave(b, "x-json-marshal", encode, marshal) })
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

var syncMap sync.Map

func syncMapLoads(n int) {
	for i := 0; i < n; i++ {
		v, _ := syncMap.Load("cus_8f2a91/ord_1029384756")
		_ = v.(*receipt)
	}
}

// BenchmarkReplay is a full memory-store replay as a generated wrapper does
// it: key material, key, claim, typed result. Baselines: singleflight.Do
// and a sync.Map load, which do far less (no key derivation, no leases).
func BenchmarkReplay(b *testing.B) {
	syncMap.Store("cus_8f2a91/ord_1029384756", &receipt{ID: "r"})
	g := idem.NewGuard(memstore.New())
	spec := &idem.Spec{Name: "bench.Charge"}
	req := benchOrder
	charge := func(ctx context.Context) (*receipt, error) { return &receipt{ID: "r", Amount: req.Amount}, nil }
	ctx := context.Background()
	replays := func(n int) {
		for i := 0; i < n; i++ {
			c, k := idemimpl.Begin(g, spec)
			k.Key().String(req.CustomerID)
			k.Key().String(req.OrderID)
			if _, err := idem.Do(ctx, c, charge); err != nil {
				panic(err)
			}
		}
	}
	replays(1) // the first call executes; every later one replays
	b.Run("idem_memory", func(b *testing.B) { b.ReportAllocs(); replays(b.N) })
	b.Run("singleflight", func(b *testing.B) { b.ReportAllocs(); singleflights(b.N) })
	b.Run("sync_map_load", func(b *testing.B) { b.ReportAllocs(); syncMapLoads(b.N) })
	b.Run("ratio_singleflight", func(b *testing.B) { interleave(b, "x-singleflight", replays, singleflights) })
	b.Run("ratio_sync_map", func(b *testing.B) { interleave(b, "x-sync-map", replays, syncMapLoads) })
}

// BenchmarkFirstExecution claims, runs and completes a new key each time.
func BenchmarkFirstExecution(b *testing.B) {
	g := idem.NewGuard(memstore.New(memstore.WithMaxRecords(1 << 30)))
	spec := &idem.Spec{Name: "bench.First"}
	ctx := context.Background()
	var n atomic.Int64
	fn := func(ctx context.Context) (*receipt, error) { return &receipt{ID: "r"}, nil }
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, k := idemimpl.Begin(g, spec)
		k.Key().Int(n.Add(1))
		if _, err := idem.Do(ctx, c, fn); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplayParallel is the replay under contention from all cores.
func BenchmarkReplayParallel(b *testing.B) {
	g := idem.NewGuard(memstore.New())
	spec := &idem.Spec{Name: "bench.Parallel"}
	fn := func(ctx context.Context) (*receipt, error) { return &receipt{ID: "r"}, nil }
	ctx := context.Background()
	replay := func() error {
		c := g.Begin(spec, "cus_8f2a91")
		_, err := idem.Do(ctx, c, fn)
		return err
	}
	if err := replay(); err != nil { // executes once; the rest replay
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := replay(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// chargeWrappers is a generated wrapper type, as idemgen writes it: the
// key code is in an unexported begin helper that the wrapper and its
// exported Key helper share. The helper takes struct (and array)
// arguments by pointer: taking this 104-byte order by value cost a replay
// about 5% (copied on every call), by pointer nothing measurable.
type chargeWrappers struct{ g *idem.Guard }

var specWrapped = &idem.Spec{Name: "bench.Wrapped"}

func (x *chargeWrappers) beginCharge(req *order) idem.Call {
	c, k := idemimpl.Begin(x.g, specWrapped)
	k.Key().String(req.CustomerID)
	k.Key().String(req.OrderID)
	return c
}

func (x *chargeWrappers) Charge(ctx context.Context, req order) (*receipt, error) {
	c := x.beginCharge(&req)
	return idem.Do(ctx, c, func(ctx context.Context) (*receipt, error) {
		return &receipt{ID: "r", Amount: req.Amount}, nil
	})
}

// chargeInline is the same wrapper with the key code written inline.
func (x *chargeWrappers) chargeInline(ctx context.Context, req order) (*receipt, error) {
	c, k := idemimpl.Begin(x.g, specWrapped)
	k.Key().String(req.CustomerID)
	k.Key().String(req.OrderID)
	return idem.Do(ctx, c, func(ctx context.Context) (*receipt, error) {
		return &receipt{ID: "r", Amount: req.Amount}, nil
	})
}

// BenchmarkReplayWrapper is a memory-store replay through a wrapper
// method taking the request by value: the key code in a begin helper
// (what idemgen generates) against the same code inline.
func BenchmarkReplayWrapper(b *testing.B) {
	x := &chargeWrappers{g: idem.NewGuard(memstore.New())}
	ctx := context.Background()
	if _, err := x.Charge(ctx, benchOrder); err != nil { // executes; the rest replay
		b.Fatal(err)
	}
	b.Run("begin_helper", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := x.Charge(ctx, benchOrder); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("inline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := x.chargeInline(ctx, benchOrder); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The store's clock fixed, as the peer's BenchmarkReplay fixes its
	// store's: the same replay without the store's clock read.
	fixed := time.Unix(1_700_000_000, 0)
	xf := &chargeWrappers{g: idem.NewGuard(memstore.New(memstore.WithClock(func() time.Time { return fixed })))}
	if _, err := xf.Charge(ctx, benchOrder); err != nil {
		b.Fatal(err)
	}
	b.Run("begin_helper_fixed_store_clock", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := xf.Charge(ctx, benchOrder); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Alternating the two in short chunks: x-inline near 1 means the
	// helper costs nothing measurable.
	helper := func(n int) {
		for range n {
			if _, err := x.Charge(ctx, benchOrder); err != nil {
				panic(err)
			}
		}
	}
	inline := func(n int) {
		for range n {
			if _, err := x.chargeInline(ctx, benchOrder); err != nil {
				panic(err)
			}
		}
	}
	b.Run("ratio", func(b *testing.B) { interleave(b, "x-inline", helper, inline) })
}

// firstWrappers is what idemgen generates for
//
//	//idem:key=n
//	func Count(ctx context.Context, n int) (int64, error)
//
// (an int key, an int64 result with its generated codec).
type firstWrappers struct{ g *idem.Guard }

var specCount = &idem.Spec{
	Name:        "bench.Count",
	TTL:         24 * time.Hour,
	Lease:       30 * time.Second,
	OnDuplicate: idem.DuplicateReturn,
	Codec: idemimpl.TypedCodec[int64]{
		Decode: func(d *idemimpl.Decoder, v *int64) { *v = d.Int(64) },
		Encode: func(e *idemimpl.Encoder, v *int64) { e.Int(*v) },
	},
}

func count(_ context.Context, n int) (int64, error) { return int64(n) * 2, nil }

func (x *firstWrappers) beginCount(n int) idem.Call {
	c, k := idemimpl.Begin(x.g, specCount)
	k.Key().Int(int64(n))
	return c
}

func (x *firstWrappers) Count(ctx context.Context, n int) (int64, error) {
	c := x.beginCount(n)
	return idem.Do(ctx, c, func(ctx context.Context) (int64, error) { return count(ctx, n) })
}

// rawClaims is the least a first execution can be: a map behind a mutex,
// claimed (absent: insert pending), run, completed (store the value).
type rawClaims struct {
	mu sync.Mutex
	m  map[int]*rawRecord
}

type rawRecord struct {
	done  bool
	value int64
}

func (r *rawClaims) do(n int) int64 {
	r.mu.Lock()
	if rec, ok := r.m[n]; ok {
		r.mu.Unlock()
		return rec.value
	}
	rec := &rawRecord{}
	r.m[n] = rec
	r.mu.Unlock()
	v, _ := count(context.Background(), n)
	r.mu.Lock()
	rec.done, rec.value = true, v
	r.mu.Unlock()
	return v
}

// BenchmarkFirstExecutionWrapper is a first execution (claim, run,
// complete a new key) through a generated wrapper on the memory store,
// against a raw map+mutex claim/complete and singleflight.Do (a new key
// each time for both), interleaved in one run.
//
// The wrapper's store is replaced every 10,000 records, as the strongest
// Go peer's lifecycle benchmark (faustbrian/go-idempotency's
// BenchmarkAcquireCompleteLifecycle) replaces its store: the heap stays
// the size of a bounded store's. idem_memory_growing keeps one store for
// the whole run, so its heap (and the collector's work) grows with b.N;
// it runs last, and what it keeps is dropped before the replay.
func BenchmarkFirstExecutionWrapper(b *testing.B) {
	ctx := context.Background()
	var x *firstWrappers
	next := 0
	firsts := func(n int) {
		for range n {
			if next%10_000 == 0 {
				x = &firstWrappers{g: idem.NewGuard(memstore.New())}
			}
			next++
			if _, err := x.Count(ctx, next); err != nil {
				panic(err)
			}
		}
	}
	raw := &rawClaims{m: make(map[int]*rawRecord)}
	rawNext := 0
	raws := func(n int) {
		for range n {
			if rawNext%10_000 == 0 {
				raw = &rawClaims{m: make(map[int]*rawRecord)}
			}
			rawNext++
			raw.do(rawNext)
		}
	}
	var sf singleflight.Group
	sfNext := 0
	sfs := func(n int) {
		for range n {
			sfNext++
			v, _, _ := sf.Do(strconv.Itoa(sfNext), func() (any, error) { return count(ctx, sfNext) })
			_ = v.(int64)
		}
	}
	b.Run("idem_memory", func(b *testing.B) { b.ReportAllocs(); firsts(b.N) })
	b.Run("raw_map_mutex", func(b *testing.B) { b.ReportAllocs(); raws(b.N) })
	b.Run("singleflight", func(b *testing.B) { b.ReportAllocs(); sfs(b.N) })
	b.Run("ratio_raw", func(b *testing.B) { interleave(b, "x-raw", firsts, raws) })
	b.Run("ratio_singleflight", func(b *testing.B) { interleave(b, "x-singleflight", firsts, sfs) })
	b.Run("idem_memory_growing", func(b *testing.B) {
		b.ReportAllocs()
		y := &firstWrappers{g: idem.NewGuard(memstore.New(memstore.WithMaxRecords(1<<30), memstore.WithMaxBytes(1<<40)))}
		for i := range b.N {
			if _, err := y.Count(ctx, i); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The replay through the same wrapper, of a key executed before.
	b.Run("replay", func(b *testing.B) {
		b.ReportAllocs()
		x := &firstWrappers{g: idem.NewGuard(memstore.New())}
		if _, err := x.Count(ctx, 1); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := x.Count(ctx, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Replays and first executions in parallel on a store the Guard keeps
// flights for (the memory store behind its Store methods only).
func BenchmarkFlightsParallel(b *testing.B) {
	g := idem.NewGuard(struct{ idemstore.Store }{memstore.New()})
	spec := &idem.Spec{Name: "bench.Flights"}
	ctx := context.Background()
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			c := g.Begin(spec, strconv.FormatInt(i%64, 10))
			if _, err := idem.Do(ctx, c, func(context.Context) (int, error) { return 1, nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
