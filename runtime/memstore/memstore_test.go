package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// The amortized sweep runs inside claims; it must never drop the record
// the claim is creating (it once did, about once in 70,000 fresh claims).
func TestMemoryStoreSweepKeepsFreshClaims(t *testing.T) {
	s := memstore.New()
	ctx := context.Background()
	for i := range 70000 {
		key := fmt.Sprint("k", i)
		res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{1, byte(i), byte(i >> 8), byte(i >> 16)}, Lease: time.Minute, TTL: time.Hour})
		if err != nil || !(res.Status == idemstore.ClaimAcquired || res.Status == idemstore.ClaimTakenOver) {
			t.Fatalf("claim %d: %v, %v", i, res.Status, err)
		}
		if _, err := s.Get(ctx, key); err != nil {
			t.Fatalf("claim %d of %q acquired, then Get = %v", i, key, err)
		}
	}
}

// A claim refused for capacity must not have advanced its entity's order.
func TestMemoryStoreFullDoesNotAdvanceOrder(t *testing.T) {
	s := memstore.New(memstore.WithMaxRecords(1))
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	claim := func(key string, at time.Time) (idemstore.ClaimResult, error) {
		return s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{byte(len(key))}, Lease: time.Minute, TTL: time.Hour,
			Order: idemstore.OrderClaim{Key: "entity", At: at}})
	}
	if _, err := claim("a", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := claim("bb", t0.Add(time.Hour)); err == nil {
		t.Fatal("second key claimed past capacity")
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if res, err := claim("ccc", t0.Add(time.Minute)); err != nil || res.Status != idemstore.ClaimAcquired {
		t.Fatalf("claim after the refused one = %v, %v; the refused claim must not have moved the entity to t0+1h", res.Status, err)
	}
}

// Hostile case: the memory store bounded its record count only, and kept
// every result twice (encoded and decoded): 200 results of 2 MB grew the
// heap by ~790 MB. Now a byte budget bounds it, with the record bound's
// "full" behaviour, and a large result is held once.
func TestMemoryStoreByteBudget(t *testing.T) {
	const mb = 1 << 20
	cases := []struct {
		name      string
		budget    int64
		results   int
		size      int
		wantFull  bool
		maxStored int64 // bytes the store may report at the end
	}{
		{"LargeResultsStopAtBudget", 16 * mb, 40, mb, true, 16*mb + mb + 4096},
		{"SmallResultsUnderBudget", 16 * mb, 100, 1024, false, 100 * 3200}, // base64: 1368 bytes, kept with its value
		{"ResultLargerThanBudget", mb / 2, 1, mb, false, mb / 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := memstore.New(memstore.WithMaxBytes(c.budget))
			g := idem.NewGuard(s)
			spec := &idem.Spec{Name: "test.Big", TTL: time.Hour}
			full := false
			var runs int
			for i := range c.results {
				payload := make([]byte, c.size)
				_, err := call(context.Background(), g, spec, fmt.Sprint("k", i), func(context.Context) ([]byte, error) {
					runs++
					return payload, nil
				})
				switch {
				case err == nil:
				case errors.Is(err, idem.ErrStoreFull):
					full = true
				case int64(c.size) > c.budget && errors.Is(err, idem.ErrResultTooLarge):
					// recorded as failed: a duplicate must not run it again
					if _, err := call(context.Background(), g, spec, fmt.Sprint("k", i), func(context.Context) ([]byte, error) {
						runs++
						return nil, nil
					}); !errors.Is(err, idem.ErrResultTooLarge) {
						t.Fatalf("duplicate of a too-large result: %v, want the recorded ErrResultTooLarge", err)
					}
				default:
					t.Fatalf("call %d: %v", i, err)
				}
				if full {
					break
				}
			}
			if full != c.wantFull {
				t.Errorf("store full = %v, want %v (bytes %d of %d)", full, c.wantFull, s.Bytes(), c.budget)
			}
			if b := s.Bytes(); b > c.maxStored {
				t.Errorf("store holds %d bytes, want at most %d", b, c.maxStored)
			}
			if full && runs > c.results {
				t.Errorf("fn ran %d times for %d keys", runs, c.results)
			}
		})
	}
}

// A large result is kept once: 20 results of 2 MB grow the live heap by
// about 40 MB, not 80 (encoded bytes plus the decoded value, as before).
func TestMemoryStoreKeepsLargeResultsOnce(t *testing.T) {
	const n, size = 20, 2 << 20
	s := memstore.New()
	g := idem.NewGuard(s)
	spec := &idem.Spec{Name: "test.Large", TTL: time.Hour}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	for i := range n {
		// A result whose JSON is about as large as its value: a string.
		v := strings.Repeat("x", size)
		if _, err := call(context.Background(), g, spec, fmt.Sprint("k", i), func(context.Context) (string, error) { return v, nil }); err != nil {
			t.Fatal(err)
		}
	}
	grew := int64(heap()) - int64(before)
	if limit := int64(n * size * 3 / 2); grew > limit {
		t.Errorf("heap grew by %d MB for %d MB of results, want at most %d MB (one copy each)", grew>>20, n*size>>20, limit>>20)
	}
	runtime.KeepAlive(s)
}

// Claims sweep their shard once it has had as many claims as it holds
// records: expired records still go without Cleanup, and a store never
// holds much more than twice its live records.
func TestMemoryStoreSweepsExpiredRecords(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := memstore.New(memstore.WithClock(func() time.Time { return now }))
	ctx := context.Background()
	claim := func(key string) {
		t.Helper()
		if res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{1}, Lease: time.Second, TTL: time.Second}); err != nil || !(res.Status == idemstore.ClaimAcquired || res.Status == idemstore.ClaimTakenOver) {
			t.Fatalf("claim %s: %v, %v", key, res.Status, err)
		}
	}
	const n = 20000
	for i := range n {
		claim(fmt.Sprint("old", i))
	}
	now = now.Add(time.Hour) // every record above has expired
	for i := range n {
		claim(fmt.Sprint("new", i))
	}
	if got := s.Len(); got > n+n/2 {
		t.Fatalf("%d records held after %d expired and %d live, want the expired mostly swept", got, n, n)
	}
}

// call runs one guarded call of spec keyed by key, the shape idemgen emits.
func call[R any](ctx context.Context, g *idem.Guard, spec *idem.Spec, key string, fn func(context.Context) (R, error)) (R, error) {
	c := g.Begin(spec, key)
	return idem.Do(ctx, c, fn)
}

// The store keeps its times as instants: a record read back gives the
// injected clock's times, and a retention too long to add saturates
// instead of wrapping into the past (which would drop the record at once).
func TestMemoryStoreTimes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		lease, ttl time.Duration
		later      time.Duration // how much later the record is read
		wantFound  bool
	}{
		{"within the lease", time.Minute, time.Hour, time.Second, true},
		{"after the lease, within the ttl", time.Minute, time.Hour, 30 * time.Minute, true},
		{"past lease and ttl", time.Minute, time.Hour, 2 * time.Hour, false},
		{"ttl too long to add", time.Minute, 1<<63 - 1, 200 * 365 * 24 * time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := t0
			s := memstore.New(memstore.WithClock(func() time.Time { return now }))
			ctx := context.Background()
			res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "k", Owner: idemstore.Token{1}, Lease: tt.lease, TTL: tt.ttl})
			if err != nil || res.Status != idemstore.ClaimAcquired {
				t.Fatalf("claim: %v, %v", res.Status, err)
			}
			if !res.LeaseUntil.Equal(t0.Add(tt.lease)) {
				t.Errorf("claim's LeaseUntil %v, want %v", res.LeaseUntil, t0.Add(tt.lease))
			}
			now = t0.Add(tt.later)
			rec, err := s.Get(ctx, "k")
			if found := err == nil; found != tt.wantFound {
				t.Fatalf("Get after %v: %v, want found %v", tt.later, err, tt.wantFound)
			}
			if err != nil {
				return
			}
			for _, c := range []struct {
				name      string
				got, want time.Time
			}{
				{"LeaseUntil", rec.LeaseUntil, t0.Add(tt.lease)},
				{"UpdatedAt", rec.UpdatedAt, t0},
				{"ClaimedAt", rec.ClaimedAt, t0},
			} {
				if !c.got.Equal(c.want) {
					t.Errorf("%s %v, want %v", c.name, c.got, c.want)
				}
			}
			if !rec.ExpiresAt.After(now) {
				t.Errorf("ExpiresAt %v is not after the read at %v", rec.ExpiresAt, now)
			}
		})
	}
}

// On the default clock the lease a claim returns carries a monotonic
// reading, from which the Guard counts the lease without reading its own
// clock.
func TestMemoryStoreMonotonicLease(t *testing.T) {
	s := memstore.New()
	before := time.Now()
	res, err := s.Claim(context.Background(), idemstore.ClaimRequest{Key: "k", Owner: idemstore.Token{1}, Lease: time.Minute, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if res.LeaseUntil == res.LeaseUntil.Round(0) {
		t.Fatalf("LeaseUntil %v has no monotonic reading", res.LeaseUntil)
	}
	if d := res.LeaseUntil.Sub(before); d < time.Minute || d > time.Minute+time.Second {
		t.Fatalf("LeaseUntil %v after the claim started, want a minute", d)
	}
}

// heapInUse is the live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// fillRetained claims and completes n keys of keyLen bytes with a result
// of resLen bytes and returns the store.
func fillRetained(t testing.TB, n, keyLen, resLen int) *memstore.Store {
	t.Helper()
	ctx := context.Background()
	st := memstore.New(memstore.WithMaxRecords(n + 1))
	data := []byte(strings.Repeat("r", resLen))
	pad := strings.Repeat("k", max(0, keyLen-12))
	for i := range n {
		key := fmt.Sprintf("%s%012d", pad, i)
		var owner idemstore.Token
		owner[0], owner[1], owner[2] = byte(i), byte(i>>8), byte(i>>16)
		cr, err := st.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: owner, Lease: time.Minute, TTL: time.Hour})
		if err != nil || cr.Status != idemstore.ClaimAcquired {
			t.Fatalf("claim %d: %v %v", i, cr.Status, err)
		}
		// Each record its own result bytes, as calls' results are.
		res := idemstore.Result{Data: append([]byte(nil), data...)}
		if err := st.Complete(ctx, idemstore.Lease{Key: key, Owner: owner, Fence: cr.Fence, Duration: time.Minute, TTL: time.Hour}, res); err != nil {
			t.Fatalf("complete %d: %v", i, err)
		}
	}
	return st
}

// TestRetainedRecordHeap measures the heap a retained (completed) record
// takes in the memory store and checks it against the store's own
// estimate (recordSize, which WithMaxBytes bounds): the estimate must not
// undercount the measured heap, or the byte bound would let the process
// use more memory than configured. IDEM_CAPACITY_VERBOSE prints the
// numbers docs/CAPACITY.md quotes.
func TestRetainedRecordHeap(t *testing.T) {
	const n = 100_000
	cases := []struct {
		name           string
		keyLen, resLen int
	}{
		{"key 64 B, result 32 B", 64, 32},
		{"key 64 B, result 1 KiB", 64, 1024},
		{"key 100 B, result 200 B", 100, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := heapInUse()
			st := fillRetained(t, n, tc.keyLen, tc.resLen)
			after := heapInUse()
			perRecord := float64(after-before) / n
			estimate := float64(st.Bytes()) / n
			t.Logf("CAPACITY memstore retained record (%s): %.0f heap bytes measured, %.0f estimated by the store (WithMaxBytes), %d records",
				tc.name, perRecord, estimate, st.Len())
			if st.Len() != n {
				t.Fatalf("store holds %d records, want %d", st.Len(), n)
			}
			if perRecord > estimate {
				t.Errorf("a retained record takes %.0f heap bytes but the store counts %.0f: WithMaxBytes would be exceeded", perRecord, estimate)
			}
			runtime.KeepAlive(st)
		})
	}
}
