package redisstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

// counter is a go-redis hook that counts round trips (a pipeline is one)
// and which script each EVALSHA/EVAL ran.
type counter struct {
	mu      sync.Mutex
	trips   int
	scripts map[string]int
}

var scriptNames = map[string]string{
	claimScript.Hash(): "claim", writeScript.Hash(): "write",
	readScript.Hash(): "read", deleteScript.Hash(): "delete",
	shardedScripts.claim.Hash(): "claim", shardedScripts.write.Hash(): "write",
	shardedScripts.del.Hash(): "delete",
}

// isHeartbeat reads the write script's packed argument: its first byte is
// the new state.
func isHeartbeat(arg any) bool {
	b, ok := arg.([]byte)
	return ok && len(b) > 0 && b[0] == byte(idemstore.StateInProgress)
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		c.trips++
		if args := cmd.Args(); len(args) > 1 && strings.HasPrefix(cmd.Name(), "eval") {
			name := "eval"
			if sha, ok := args[1].(string); ok && scriptNames[sha] != "" {
				name = scriptNames[sha]
			}
			// A heartbeat is a write whose new state is in_progress: its
			// first argument, after the keys.
			if n, ok := args[2].(int); name == "write" && ok && len(args) > 3+n && isHeartbeat(args[3+n]) {
				name = "heartbeat"
			}
			c.scripts[name]++
		}
		if cmd.Name() == "set" {
			c.scripts["claim-set"]++ // Claim's SET NX GET
		}
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.mu.Lock()
		c.trips++
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (c *counter) reset() (trips int, scripts map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	trips, scripts = c.trips, c.scripts
	c.trips, c.scripts = 0, map[string]int{}
	return trips, scripts
}

// TestRoundTrips: a replay is one round trip, a first execution two (the
// claim is a SET NX GET, the completion a script), and
// heartbeats run off the caller's path (a fast call makes none; a slow one
// makes them from the Guard's timer while the caller's own trips stay two).
func TestRoundTrips(t *testing.T) {
	rdb := standalone(t)
	cnt := &counter{scripts: map[string]int{}}
	rdb.AddHook(cnt)
	s := newStore(t, rdb)
	g := idem.NewGuard(s)

	call := idemtest.SleepCall(g)
	fast := &idem.Spec{Name: "redisstore.fast", Lease: 30 * time.Second}
	slow := &idem.Spec{Name: "redisstore.slow", Lease: 150 * time.Millisecond}

	// Warm up: the eviction check and loading the scripts (EVALSHA misses
	// once per server) are one-time costs, not per call.
	if _, err := call(fast, "warm", 0); err != nil {
		t.Fatal(err)
	}
	cnt.reset()

	tests := []struct {
		name        string
		spec        *idem.Spec
		id          string
		sleep       time.Duration
		wantTrips   int
		wantScripts map[string]int
	}{
		{"first execution", fast, "a", 0, 2, map[string]int{"claim-set": 1, "write": 1}},
		{"replay", fast, "a", 0, 1, map[string]int{"claim-set": 1}},
		{"replay again", fast, "a", 0, 1, map[string]int{"claim-set": 1}},
		{"slow first execution", slow, "b", 200 * time.Millisecond, -1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cnt.reset()
			got, err := call(tt.spec, tt.id, tt.sleep)
			if err != nil || got != "r-"+tt.id {
				t.Fatalf("call = %q, %v", got, err)
			}
			trips, scripts := cnt.reset()
			if tt.wantScripts == nil {
				// Heartbeats every lease/3 = 50ms during 200ms: they
				// happened, and the caller still made exactly a claim and
				// a completion.
				if scripts["heartbeat"] == 0 {
					t.Fatalf("no heartbeat during a call longer than the lease: %v", scripts)
				}
				if scripts["claim-set"] != 1 || scripts["write"] != 1 || trips != 2+scripts["heartbeat"] {
					t.Fatalf("slow call: %d round trips, scripts %v; want claim 1, write 1, the rest heartbeats", trips, scripts)
				}
				return
			}
			if trips != tt.wantTrips {
				t.Errorf("round trips = %d, want %d", trips, tt.wantTrips)
			}
			if diff := cmp.Diff(tt.wantScripts, scripts); diff != "" {
				t.Errorf("scripts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCorruptRecords: a value at a record key that is not a valid record is
// ErrCorruptRecord for every operation, never overwritten, never a panic;
// Delete clears it.
func TestCorruptRecords(t *testing.T) {
	rdb := standalone(t)
	s := newStore(t, rdb)
	ctx := context.Background()
	good := encodeRecord(idemstore.Record{State: idemstore.StateCompleted, Fence: 3,
		LeaseUntil: time.Now(), ExpiresAt: time.Now().Add(time.Hour), UpdatedAt: time.Now()}, 1)
	tests := []struct {
		name string
		put  func(key string) error
	}{
		{"foreign string", func(k string) error { return rdb.Set(ctx, k, "hello", time.Minute).Err() }},
		{"empty string", func(k string) error { return rdb.Set(ctx, k, "", time.Minute).Err() }},
		{"truncated header", func(k string) error { return rdb.Set(ctx, k, good[:40], time.Minute).Err() }},
		{"version 3 without its claimed-at field", func(k string) error { return rdb.Set(ctx, k, good[:95], time.Minute).Err() }},
		{"future version", func(k string) error {
			v := append([]byte(nil), good...)
			v[1] = 9
			return rdb.Set(ctx, k, v, time.Minute).Err()
		}},
		{"unknown state", func(k string) error {
			v := append([]byte(nil), good...)
			v[offState] = 42
			return rdb.Set(ctx, k, v, time.Minute).Err()
		}},
		{"fresh claim (version 2) in a finished state", func(k string) error {
			v := append([]byte(nil), good...)
			v[1] = freshVersion
			return rdb.Set(ctx, k, v, time.Minute).Err()
		}},
		{"hash", func(k string) error { return rdb.HSet(ctx, k, "state", "completed").Err() }},
		{"list", func(k string) error { return rdb.RPush(ctx, k, "x").Err() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "corrupt:" + tt.name
			rk := s.RecordKey(key)
			if err := tt.put(rk); err != nil {
				t.Fatal(err)
			}
			before, _ := rdb.Dump(ctx, rk).Result()
			l := idemstore.Lease{Key: key, Owner: idemstore.Token{1}, Fence: 3, Duration: time.Second, TTL: time.Minute}
			ops := map[string]error{}
			_, ops["claim"] = s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{2}, Lease: time.Second, TTL: time.Minute})
			ops["heartbeat"] = s.Heartbeat(ctx, l)
			ops["complete"] = s.Complete(ctx, l, idemstore.Result{Data: []byte("x")})
			ops["fail"] = s.Fail(ctx, l, idemstore.Result{Data: []byte("x")})
			ops["release"] = s.Release(ctx, l)
			_, ops["get"] = s.Get(ctx, key)
			wctx, cancel := context.WithTimeout(ctx, time.Second)
			ops["wait"] = s.Wait(wctx, key)
			cancel()
			for op, err := range ops {
				if !errors.Is(err, idem.ErrCorruptRecord) {
					t.Errorf("%s = %v, want ErrCorruptRecord", op, err)
				}
			}
			if after, _ := rdb.Dump(ctx, rk).Result(); after != before {
				t.Fatalf("the value at %s changed", rk)
			}
			if err := s.Delete(ctx, key); err != nil {
				t.Fatalf("Delete of a corrupt record: %v", err)
			}
			if _, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{2}, Lease: time.Second, TTL: time.Minute}); err != nil {
				t.Fatalf("claim after Delete: %v", err)
			}
		})
	}
}

// TestCorruptOrderRecord: a foreign value at an entity's order key stops an
// ordered claim with ErrCorruptRecord and is left alone.
func TestCorruptOrderRecord(t *testing.T) {
	rdb := standalone(t)
	s := newStore(t, rdb)
	ctx := context.Background()
	entity := "f:v0:{ent}"
	if err := rdb.Set(ctx, s.RecordKey(entity), "not an order", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Claim(ctx, idemstore.ClaimRequest{Key: entity + ":a", Owner: idemstore.Token{1}, Lease: time.Second, TTL: time.Minute,
		Order: idemstore.OrderClaim{Key: entity, At: time.Now()}})
	if !errors.Is(err, idem.ErrCorruptRecord) {
		t.Fatalf("claim = %v, want ErrCorruptRecord", err)
	}
	if v, _ := rdb.Get(ctx, s.RecordKey(entity)).Result(); v != "not an order" {
		t.Fatalf("order key overwritten: %q", v)
	}
}

// A fresh claim's times are placed by the key's Redis expiry, with a
// millisecond to spare.
func TestFreshRecordCodec(t *testing.T) {
	now := time.UnixMilli(time.Now().UnixMilli()) // PEXPIRETIME is in whole ms
	v, px := encodeFresh(idemstore.Token{1}, idemstore.Fingerprint{2}, []byte("12345678"), 1500*time.Microsecond, time.Hour)
	if want := int64(3600002); px != want { // 1h + 1.5ms, rounded up to whole ms
		t.Errorf("PX = %d, want %d", px, want)
	}
	got, err := decodeRecord("k", string(v), now.Add(10*time.Minute).UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	exp := now.Add(10*time.Minute + time.Millisecond)
	want := idemstore.Record{Key: "k", State: idemstore.StateInProgress, Owner: idemstore.Token{1}, Fence: 1, Fingerprint: idemstore.Fingerprint{2},
		ExpiresAt: exp, LeaseUntil: exp.Add(-time.Hour), UpdatedAt: exp.Add(-time.Hour - 1500*time.Microsecond),
		ClaimedAt: exp.Add(-time.Hour - 1500*time.Microsecond)} // its only write is its claim
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fresh record (-want +got):\n%s", diff)
	}
	bad := []byte(string(v))
	bad[offState] = byte(idemstore.StateCompleted)
	if _, err := decodeRecord("k", string(bad), now.UnixMilli()); !errors.Is(err, idem.ErrCorruptRecord) {
		t.Errorf("fresh record in state completed: err = %v, want ErrCorruptRecord", err)
	}
}

func TestRecordCodec(t *testing.T) {
	now := time.UnixMicro(time.Now().UnixMicro())
	tests := []idemstore.Record{
		{Key: "k", State: idemstore.StateInProgress, Owner: idemstore.Token{1, 2}, Fence: 1, Fingerprint: idemstore.Fingerprint{9},
			LeaseUntil: now.Add(time.Second), ExpiresAt: now.Add(time.Hour), UpdatedAt: now, ClaimedAt: now},
		{Key: "k", State: idemstore.StateCompleted, Owner: idemstore.Token{3}, Fence: 1 << 40, Fingerprint: idemstore.Fingerprint{8},
			Result: []byte(`{"a":1}`), LeaseUntil: now, ExpiresAt: now.Add(time.Hour), UpdatedAt: now, ClaimedAt: now.Add(-time.Minute)},
		{Key: "k", State: idemstore.StateReleased, Fence: 7, LeaseUntil: now, ExpiresAt: now.Add(time.Minute), UpdatedAt: now, ClaimedAt: now.Add(-time.Second)},
	}
	for _, r := range tests {
		got, err := decodeRecord("k", string(encodeRecord(r, 5)), 0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(r, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
		// A record the previous version wrote (encoding 1) reads the
		// same, with no ClaimedAt, never as corrupt.
		got, err = decodeRecord("k", string(encodeRecordV1(r, 5)), 0)
		if err != nil {
			t.Fatalf("version-1 record: %v", err)
		}
		want := r
		want.ClaimedAt = time.Time{}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("version-1 record (-want +got):\n%s", diff)
		}
	}
}

func TestRecordKeys(t *testing.T) {
	s, err := build(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), []Option{WithKeyPrefix("p:")})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ key, want string }{
		{"idem:f:v0:abc", "p:{idem:f:v0:abc}"},
		{"idem:f:v0:{ent}:abc", "p:=idem:f:v0:{ent}:abc"},
		{"idem:f:v0:{ent}", "p:=idem:f:v0:{ent}"},
		{"{abc}", "p:={abc}"},
		{"abc}", "p:{abc}}"},
		{"a{}b", "p:{a{}b}"},
	}
	for _, tt := range tests {
		got := s.RecordKey(tt.key)
		if got != tt.want {
			t.Errorf("RecordKey(%q) = %q, want %q", tt.key, got, tt.want)
		}
		back, ok := s.storeKey(got)
		if !ok || back != tt.key {
			t.Errorf("storeKey(%q) = %q, %v; want %q", got, back, ok, tt.key)
		}
	}
	if _, err := New(context.Background(), redis.NewClient(&redis.Options{}), WithKeyPrefix("a{b}")); err == nil {
		t.Error("New accepted a prefix with a hash tag")
	}
}

// TestRetainedFingerprintEveryEncoding: records written by hand in each
// encoding this store reads (version 1 as the scripts write it, version 2
// as the SET NX fast path writes it) keep their fingerprint: another
// payload is a mismatch that leaves the value untouched, whether the lease
// expired or the key was released; the same payload takes the key.
func TestRetainedFingerprintEveryEncoding(t *testing.T) {
	rdb := standalone(t)
	s := newStore(t, rdb)
	ctx := context.Background()
	fpA, fpB := idemstore.Fingerprint{0xA}, idemstore.Fingerprint{0xB}
	v1 := func(st idemstore.State) func(key string) error {
		return func(key string) error {
			now := time.Now()
			r := idemstore.Record{State: st, Owner: idemstore.Token{1}, Fence: 4, Fingerprint: fpA,
				LeaseUntil: now.Add(-time.Second), ExpiresAt: now.Add(time.Hour), UpdatedAt: now.Add(-2 * time.Second)}
			return rdb.Set(ctx, s.RecordKey(key), encodeRecord(r, 7), time.Hour).Err()
		}
	}
	tests := []struct {
		name      string
		put       func(key string) error
		wantFence uint64 // of the record found
		want      idemstore.ClaimStatus
	}{
		{"version 1 in progress, lease expired", v1(idemstore.StateInProgress), 4, idemstore.ClaimTakenOver},
		{"version 1 released", v1(idemstore.StateReleased), 4, idemstore.ClaimAcquired},
		{"version 2 fresh claim, lease expired", func(key string) error {
			v, px := encodeFresh(idemstore.Token{1}, fpA, []byte("op-id-01"), time.Millisecond, time.Hour)
			if err := rdb.Set(ctx, s.RecordKey(key), v, time.Duration(px)*time.Millisecond).Err(); err != nil {
				return err
			}
			time.Sleep(20 * time.Millisecond)
			return nil
		}, 1, idemstore.ClaimTakenOver},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "retained:" + tt.name
			if err := tt.put(key); err != nil {
				t.Fatal(err)
			}
			rk := s.RecordKey(key)
			before, _ := rdb.Get(ctx, rk).Result()
			res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Fingerprint: fpB, Owner: idemstore.Token{2}, Lease: time.Second, TTL: time.Hour})
			if err != nil || res.Status != idemstore.ClaimMismatch || res.Fence != tt.wantFence {
				t.Fatalf("claim with another payload = %v fence %d, %v; want mismatch fence %d", res.Status, res.Fence, err, tt.wantFence)
			}
			if after, _ := rdb.Get(ctx, rk).Result(); after != before {
				t.Fatal("a mismatched claim changed the record")
			}
			res, err = s.Claim(ctx, idemstore.ClaimRequest{Key: key, Fingerprint: fpA, Owner: idemstore.Token{3}, Lease: time.Second, TTL: time.Hour})
			if err != nil || res.Status != tt.want || res.Fence != tt.wantFence+1 {
				t.Fatalf("claim with the record's payload = %v fence %d, %v; want %v fence %d", res.Status, res.Fence, err, tt.want, tt.wantFence+1)
			}
		})
	}
}

// TestNewChecksReachability: New against a refused port fails at once,
// well inside a short ctx, with an error wrapping idem.ErrStoreUnavailable
// and the cause that names the address once. Before, New succeeded and
// the first call failed 3.4s later.
func TestNewChecksReachability(t *testing.T) {
	addr := testenv.RefusedAddr(t)
	clients := map[string]func() redis.UniversalClient{
		"Client": func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: addr}) },
		"ClusterClient": func() redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
		},
	}
	for name, mk := range clients {
		t.Run(name, func(t *testing.T) {
			rdb := mk()
			defer rdb.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			start := time.Now()
			s, err := New(ctx, rdb, WithLogger(quietLogger()))
			took := time.Since(start)
			if s != nil || err == nil {
				t.Fatalf("New over a refused port = %v, %v; want an error", s, err)
			}
			if took > 500*time.Millisecond {
				t.Errorf("New took %v to fail; want it at once", took)
			}
			if !errors.Is(err, idem.ErrStoreUnavailable) || !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("New = %v; want it to wrap idem.ErrStoreUnavailable and connection refused", err)
			}
			if n := strings.Count(err.Error(), addr); n != 1 {
				t.Errorf("New = %q names %s %d times, want once", err, addr, n)
			}
			if p := testenv.RepeatedPhrase(err.Error(), 3); p != "" {
				t.Errorf("New = %q repeats %q", err, p)
			}
		})
	}
}

// TestNewBoundedByCtx: against a server that accepts connections but
// never answers, New returns when ctx ends, with an error wrapping both
// idem.ErrStoreUnavailable and the ctx's, naming the address.
func TestNewBoundedByCtx(t *testing.T) {
	addr := silentServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := New(ctx, rdb, WithLogger(quietLogger()))
	if took := time.Since(start); took > time.Second {
		t.Errorf("New took %v with a 100ms ctx", took)
	}
	if !errors.Is(err, idem.ErrStoreUnavailable) || !errors.Is(err, context.DeadlineExceeded) || strings.Count(err.Error(), addr) != 1 {
		t.Errorf("New = %v; want idem.ErrStoreUnavailable and context.DeadlineExceeded, the address once", err)
	}
}

// TestNewSucceedsOnLiveServer: New's PING leaves nothing behind and the
// store works.
func TestNewSucceedsOnLiveServer(t *testing.T) {
	rdb := standalone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := New(ctx, rdb, WithKeyPrefix(testPrefix(t)), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cancel() // the store does not keep New's ctx
	if _, err := s.Claim(context.Background(), idemstore.ClaimRequest{Key: "k", Owner: idemstore.Token{1}, Lease: time.Second, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
}

// TestUnavailableErrorsSayItOnce: every operation of a store whose server
// refuses connections, and a Guard's call over it, fails with an error
// wrapping idem.ErrStoreUnavailable whose text repeats no phrase (no
// "store unavailable: … store unavailable").
func TestUnavailableErrorsSayItOnce(t *testing.T) {
	addr := testenv.RefusedAddr(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
	defer rdb.Close()
	s, err := build(rdb, []Option{WithLogger(quietLogger())})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	idemtest.Unavailable(t, s, true)
}
