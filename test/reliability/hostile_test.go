package reliability

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/test/reliability/work"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// hostileSection marks the rows of the hostile-input scenarios, which the
// report shows in a section of their own.
const hostileSection = "hostile"

// TestHostileInputs runs the hostile-input scenarios: inputs and faults an
// adversarial user produced against earlier builds, each of which made a
// function run twice, run for nobody, or strand its key. They run in this
// process through the generated wrappers of test/reliability/work; the
// executions are still counted by the ledger the functions write.
func TestHostileInputs(t *testing.T) {
	h := newHarness(t)
	rec := func(t *testing.T, r row) {
		t.Helper()
		r.Section = hostileSection
		record(t, r)
	}
	for _, store := range []string{"redis", "postgres", "file"} {
		t.Run(store, func(t *testing.T) {
			h.needStore(t, store)
			t.Run("unencodable", func(t *testing.T) {
				for _, r := range h.hostileUnencodable(t, store) {
					rec(t, r)
				}
			})
			t.Run("goexit", func(t *testing.T) { rec(t, h.hostileGoexit(t, store)) })
			t.Run("corrupt", func(t *testing.T) { rec(t, h.hostileCorrupt(t, store)) })
			if store == "file" {
				return // no network between the process and its records
			}
			t.Run("slowclaim", func(t *testing.T) {
				for _, r := range h.hostileSlowClaim(t, store) {
					rec(t, r)
				}
			})
		})
	}
}

// hostileEnv is one hostile scenario's store, Guard and wrappers.
type hostileEnv struct {
	store idemstore.Store
	g     *idem.Guard
	fx    *work.IdempotentEffects
	eff   *work.Effects
	key   func(i int) string
}

func (h *harness) hostileEnv(t *testing.T, store, scenario, addr string, opts ...idem.Option) *hostileEnv {
	t.Helper()
	cfg := h.base(store, "hostile", addr)
	st, closeStore, err := openStore(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open %s store: %v", store, err)
	}
	t.Cleanup(closeStore)
	eff := &work.Effects{Ledger: h.ledger}
	g := idem.NewGuard(st, opts...)
	prefix := fmt.Sprintf("%s/hostile-%s/", store, scenario)
	return &hostileEnv{store: st, g: g, fx: work.NewIdempotentEffects(eff, g), eff: eff,
		key: func(i int) string { return fmt.Sprintf("%s%03d", prefix, i) }}
}

func (h *harness) ledgerCount(t *testing.T, prefix string) int {
	n := 0
	for _, rs := range h.executions(t, prefix) {
		n += len(rs)
	}
	return n
}

// hostileUnencodable: results encoding/json cannot encode. Earlier builds
// released the key when encoding failed, so every duplicate ran the
// function again. Now a NaN field is stored bit for bit by the generated
// codec and replayed; a result whose own marshaler refuses it is recorded
// as failed (ErrResultNotEncodable): the first caller gets the function's
// value with that error, duplicates (this process and another Guard) the
// recorded failure. Either way: one execution per key.
func (h *harness) hostileUnencodable(t *testing.T, store string) []row {
	start := time.Now()
	e := h.hostileEnv(t, store, "unencodable", "")
	other := work.NewIdempotentEffects(e.eff, idem.NewGuard(e.store))
	nan, refused := &violations{}, &violations{}
	const keys, dups = 5, 4
	for i := range keys {
		k := e.key(i)
		first, err := e.fx.Measure(context.Background(), k)
		if err != nil || !math.IsNaN(first.Value) {
			nan.add("%s: NaN result, first call: %+v, %v", k, first, err)
		}
		for d := range dups {
			fx := e.fx
			if d%2 == 1 {
				fx = other
			}
			got, err := fx.Measure(context.Background(), k)
			if err != nil || got.Outcome != first.Outcome || !math.IsNaN(got.Value) {
				nan.add("%s: NaN result, duplicate %d: %+v, %v; want the first call's outcome and NaN", k, d, got, err)
			}
		}
		sk := k + "/strict"
		r, err := e.fx.Strict(context.Background(), sk)
		if !errors.Is(err, idem.ErrResultNotEncodable) || r.Key != sk {
			refused.add("%s: first call: %+v, %v; want the function's own value and ErrResultNotEncodable", sk, r.Outcome, err)
		}
		for d := range dups {
			fx := e.fx
			if d%2 == 1 {
				fx = other
			}
			_, err := fx.Strict(context.Background(), sk)
			var rec *idem.RecordedError
			if !errors.As(err, &rec) || !errors.Is(err, idem.ErrResultNotEncodable) {
				refused.add("%s: duplicate %d: %v, want the recorded ErrResultNotEncodable", sk, d, err)
			}
		}
	}
	rows := h.executions(t, e.key(0)[:len(e.key(0))-3])
	nNaN, nRefused := 0, 0
	for k, rs := range rows {
		if strings.HasSuffix(k, "/strict") {
			nRefused += len(rs)
		} else {
			nNaN += len(rs)
		}
	}
	if nNaN != keys {
		nan.add("ledger: %d executions for %d keys, want %d", nNaN, keys, keys)
	}
	if nRefused != keys {
		refused.add("ledger: %d executions for %d keys, want %d", nRefused, keys, keys)
	}
	took := time.Since(start)
	trials := fmt.Sprintf("%d keys × (1 call + %d duplicates, half from another Guard)", keys, dups)
	return []row{
		{Store: store, Scenario: "NaN in a result (encoding/json refuses it)", v: nan, took: took, Trials: trials,
			Expected: fmt.Sprint(keys), Observed: fmt.Sprint(nNaN),
			Notes: "stored bit for bit by the generated codec; duplicates replay the first call's value, NaN included"},
		{Store: store, Scenario: "result whose own marshaler refuses it", v: refused, took: took, Trials: trials,
			Expected: fmt.Sprint(keys), Observed: fmt.Sprint(nRefused),
			Notes: "first caller: its value + ErrResultNotEncodable; duplicates: the recorded failure (errors.Is ErrResultNotEncodable)"},
	}
}

// hostileGoexit: the function calls runtime.Goexit (t.Fatal in a test).
// Earlier builds re-panicked nil and crashed the process. Expected: the
// goroutine exits, the key is released, a retry runs once more and its
// result is replayed after that: two executions per key.
func (h *harness) hostileGoexit(t *testing.T, store string) row {
	start := time.Now()
	e := h.hostileEnv(t, store, "goexit", "")
	var exits atomic.Int64
	e.eff.Hooks.Exit = func(string) bool { return exits.Add(1)%2 == 1 } // each key's first call
	v := &violations{}
	const keys = 5
	for i := range keys {
		k := e.key(i)
		done := make(chan bool)
		go func() {
			returned := false
			defer func() { done <- returned }()
			_, _ = e.fx.Exit(context.Background(), k)
			returned = true
		}()
		if <-done {
			v.add("%s: the wrapper returned after runtime.Goexit", k)
		}
		first, err := e.fx.Exit(context.Background(), k)
		if err != nil {
			v.add("%s: retry after Goexit: %v, want a run", k, err)
		}
		again, err := e.fx.Exit(context.Background(), k)
		if err != nil || again != first {
			v.add("%s: replay after the retry: %+v, %v; want %+v", k, again, err, first)
		}
	}
	n := h.ledgerCount(t, e.key(0)[:len(e.key(0))-3])
	if n != 2*keys {
		v.add("ledger: %d executions for %d keys, want %d (the Goexit, then the retry)", n, keys, 2*keys)
	}
	return row{Store: store, Scenario: "runtime.Goexit in the function", v: v, took: time.Since(start),
		Trials:   fmt.Sprintf("%d keys × (Goexit, retry, replay)", keys),
		Expected: fmt.Sprint(2 * keys), Observed: fmt.Sprint(n),
		Notes: "the goroutine exits, the key is released as after a panic; the retry runs once and is replayed"}
}

// hostileCorrupt: a malformed record at a key, and a Guard that fails
// open. Earlier builds ran the function unguarded on every call.
// Expected: ErrCorruptRecord on every call, no execution.
func (h *harness) hostileCorrupt(t *testing.T, store string) row {
	start := time.Now()
	e := h.hostileEnv(t, store, "corrupt", "", idem.WithKeyPrefix("idemcorrupt:"+h.runID+":"), idem.WithFailOpen())
	v := &violations{}
	const keys, calls = 3, 5
	for i := range keys {
		k := e.key(i)
		if _, err := e.fx.Exit(context.Background(), k); err != nil {
			t.Fatalf("%s: first call: %v", k, err)
		}
	}
	// Find the records just written and overwrite each with bytes the
	// store cannot decode, as a foreign writer or a bad disk would.
	var planted []string
	err := e.store.(idemstore.Admin).List(context.Background(), "idemcorrupt:"+h.runID+":", func(r idemstore.Record) error {
		planted = append(planted, r.Key)
		return nil
	})
	if err != nil || len(planted) != keys {
		t.Fatalf("listing the records to corrupt: %d found, %v", len(planted), err)
	}
	for _, key := range planted {
		h.plantCorrupt(t, store, key)
	}
	before := h.ledgerCount(t, e.key(0)[:len(e.key(0))-3])
	for i := range keys {
		for range calls {
			if _, err := e.fx.Exit(context.Background(), e.key(i)); !errors.Is(err, idem.ErrCorruptRecord) {
				v.add("%s: call over a corrupt record with fail-open: %v, want ErrCorruptRecord", e.key(i), err)
			}
		}
	}
	n := h.ledgerCount(t, e.key(0)[:len(e.key(0))-3]) - before
	if n != 0 {
		v.add("ledger: %d executions over corrupt records, want 0", n)
	}
	return row{Store: store, Scenario: "corrupt record, Guard WithFailOpen", v: v, took: time.Since(start),
		Trials:   fmt.Sprintf("%d keys × %d calls over a malformed record", keys, calls),
		Expected: "0", Observed: fmt.Sprint(n),
		Notes: "every call: ErrCorruptRecord; fail-open is for an unreachable store only"}
}

// plantCorrupt overwrites the record of the Guard key key in store.
func (h *harness) plantCorrupt(t *testing.T, store, key string) {
	t.Helper()
	ctx := context.Background()
	switch store {
	case "redis":
		rdb := redis.NewClient(&redis.Options{Addr: h.redisAddr})
		defer rdb.Close()
		// redisstore.Store.RecordKey: "<prefix>{<key>}" for an untagged key.
		if err := rdb.Set(ctx, h.redisPrefix()+"{"+key+"}", "\x00not a record", 0).Err(); err != nil {
			t.Fatal(err)
		}
	case "postgres":
		tag, err := h.pool.Exec(ctx, `UPDATE `+pgx.Identifier{h.recSchema, "idem_records"}.Sanitize()+` SET state = 9 WHERE key = $1`, key)
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("corrupting %s: %v (%d rows)", key, err, tag.RowsAffected())
		}
	case "file":
		sum := sha256.Sum256([]byte(key))
		hx := hex.EncodeToString(sum[:])
		path := filepath.Join(h.fileDir, hx[0:2], hx[2:4], hx+".rec")
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("corrupting %s: %v", key, err)
		}
		if err := os.WriteFile(path, []byte("not a record"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// hostileSlowClaim: a link slower than the caller's deadline. Each
// claim's request reaches the server only after the caller gave up. Earlier
// builds, with a client that ignores ctx deadlines (go-redis's default),
// returned late with a nil error and ran the function for nobody; and a
// claim that landed after the caller gave up stranded the key for the
// whole lease (10s here). Expected: the call returns the ctx's error at
// about its deadline without running, and a retry from another process
// runs well inside the lease, once.
func (h *harness) hostileSlowClaim(t *testing.T, store string) []row {
	start := time.Now()
	upstream := h.redisAddr
	if store == "postgres" {
		upstream = h.pgHostPort()
	}
	p, err := NewFaultProxy(upstream)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	e := h.hostileEnv(t, store, "slowclaim", p.Addr())
	direct := h.hostileEnv(t, store, "slowclaim", "")
	// Warm the pooled connections up before the link slows down, so the
	// delay hits the claim, not the dial.
	if _, err := e.fx.Storm(context.Background(), e.key(999)); err != nil {
		t.Fatalf("warm-up: %v", err)
	}
	const keys = 5
	const deadline, latency = 60 * time.Millisecond, 300 * time.Millisecond
	late, ran := &violations{}, &violations{}
	var slowest, slowestRetry time.Duration
	for i := range keys {
		k := e.key(i)
		p.Set(Latency, latency)
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		t0 := time.Now()
		_, err := e.fx.Storm(ctx, k)
		took := time.Since(t0)
		cancel()
		slowest = max(slowest, took)
		if cls := Classify(err); cls != "deadline" && cls != "store_unavailable" && cls != "canceled" {
			late.add("%s: call with a %s deadline: %v (%s), want the ctx's error", k, deadline, err, cls)
		}
		// A round trip through the link takes 2×latency; a call bounded by
		// its ctx returns well before that (the slack covers a loaded
		// 2-core machine and pgx's cancel request).
		if took > deadline+latency {
			late.add("%s: call with a %s deadline returned after %s (a round trip takes %s)", k, deadline, took.Round(time.Millisecond), 2*latency)
		}
		time.Sleep(latency + 50*time.Millisecond) // the claim lands now
		p.Heal()
		rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
		t1 := time.Now()
		_, err = direct.fx.Storm(rctx, k) // another process, on a healthy link
		rcancel()
		rt := time.Since(t1)
		slowestRetry = max(slowestRetry, rt)
		if err != nil {
			ran.add("%s: retry: %v", k, err)
		}
		if rt > 5*time.Second {
			ran.add("%s: retry took %s: the claim that landed after its caller gave up stranded the key (lease 10s)", k, rt.Round(time.Millisecond))
		}
	}
	prefix := e.key(0)[:len(e.key(0))-3]
	rows := h.executions(t, prefix)
	n := 0
	for k, rs := range rows {
		if k == e.key(999) {
			continue
		}
		n += len(rs)
		for _, r := range rs {
			if r.CtxLive != nil && !*r.CtxLive {
				late.add("%s: an execution ran with its ctx already done", k)
			}
		}
	}
	if n != keys {
		ran.add("ledger: %d executions for %d keys, want %d (the retries only)", n, keys, keys)
	}
	took := time.Since(start)
	return []row{
		{Store: store, Scenario: "ctx deadline shorter than the store round trip", v: late, took: took,
			Trials:   fmt.Sprintf("%d calls, %s deadline, link delayed %s each way (proxy), default client", keys, deadline, latency),
			Expected: "0 during the deadline", Observed: fmt.Sprintf("%d (all from the retries)", n),
			Notes: fmt.Sprintf("calls returned the ctx's error without running; slowest return %s", slowest.Round(time.Millisecond))},
		{Store: store, Scenario: "claim lands after its caller gave up", v: ran, took: took,
			Trials:   fmt.Sprintf("%d keys, then a retry from another Guard on a healthy link", keys),
			Expected: fmt.Sprint(keys), Observed: fmt.Sprint(n),
			Notes: fmt.Sprintf("the caller's Guard found its own token and released the claim; slowest retry %s (lease 10s)", slowestRetry.Round(time.Millisecond))},
	}
}

// hostileRows returns the rows of the hostile section.
func hostileRows(rows []row) (hostile, rest []row) {
	for _, r := range rows {
		if r.Section == hostileSection {
			hostile = append(hostile, r)
		} else {
			rest = append(rest, r)
		}
	}
	return hostile, rest
}
