package idemtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// hostileCases drive a store through a Guard the way an adversarial user
// would, on paths that used to run a function twice or strand a key. The
// faults are injected by wrapping the store under test (a claim reply that
// is lost, a client that ignores ctx deadlines), so every store, third-party
// ones included, is held to the same outcome.
var hostileCases = []suiteCase{
	{"HostileUnencodableResultRecordedNotRerun", testUnencodableResult},
	{"HostileCtxEndsDuringClaimDoesNotRun", testCtxEndsDuringClaim},
	{"HostileLostClaimReplyGivenBack", testLostClaimReply},
	{"HostileGoexitReleasesKey", testGoexit},
	{"HostileCorruptRecordNeverFailsOpen", testCorruptNeverFailsOpen},
	{"HostileOverlongKeyNeverFailsOpen", testOverlongKeyNeverFailsOpen},
	{"HostileSharedNameNeverCrossReplays", testFunctionIdentity},
	{"HostileStepAfterReturnDoesNotRun", testStepAfterReturn},
}

// testStepAfterReturn: a step called with the ctx of a call that returned
// (a goroutine the function left running) is idem.ErrStep, on every
// store, and its function does not run.
func testStepAfterReturn(t *testing.T, e *env) {
	g := idem.NewGuard(e.s)
	var late context.Context
	if _, err := e.guardCall(ctx, g, e.spec("late"), "a", func(ctx context.Context) (any, error) {
		late = ctx
		return "done", nil
	}); err != nil {
		t.Fatal(err)
	}
	ran := false
	_, err := idem.Step(late, "charge", func(context.Context) (string, error) { ran = true; return "ch_1", nil })
	if !errors.Is(err, idem.ErrStep) || ran {
		t.Fatalf("a step after its call returned: ran %v, err %v; want not run, ErrStep", ran, err)
	}
}

// guardCall runs fn through g with a spec of its own and the env's key
// plus id as the key material, counting runs in n.
func (e *env) guardCall(ctx context.Context, g *idem.Guard, spec *idem.Spec, id string, fn func(context.Context) (any, error)) (any, error) {
	c, k := idemimpl.Begin(g, spec)
	k.Key().String(e.key)
	k.Key().String(id)
	return idem.Do(ctx, c, fn)
}

func (e *env) spec(name string) *idem.Spec {
	return &idem.Spec{Name: "idemtest." + name, Lease: 30 * time.Second, TTL: time.Hour}
}

type badJSON struct{}

func (badJSON) MarshalJSON() ([]byte, error) { return nil, errors.New("badJSON refuses") }

// testUnencodableResult: a result the codec cannot encode (NaN, ±Inf, a
// failing MarshalJSON) must not release the key: the function ran. The
// first caller gets fn's value and ErrResultNotEncodable; duplicates get
// the recorded failure, which matches it too.
func testUnencodableResult(t *testing.T, e *env) {
	cases := []struct {
		name  string
		value any
	}{
		{"NaN", struct{ Amount float64 }{math.NaN()}},
		{"PosInf", struct{ Amount float64 }{math.Inf(1)}},
		{"NegInf", []float64{1, math.Inf(-1)}},
		{"MarshalJSONError", badJSON{}},
	}
	g := idem.NewGuard(e.s)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := e.spec("Unencodable" + c.name)
			var runs atomic.Int64
			fn := func(context.Context) (any, error) { runs.Add(1); return c.value, nil }
			v, err := e.guardCall(ctx, g, spec, c.name, fn)
			if !errors.Is(err, idem.ErrResultNotEncodable) {
				t.Fatalf("first call: err = %v, want ErrResultNotEncodable", err)
			}
			if fmt.Sprint(v) != fmt.Sprint(c.value) {
				t.Errorf("first call returned %v, want fn's own value %v", v, c.value)
			}
			for _, dup := range []*idem.Guard{g, idem.NewGuard(e.s)} { // this process, another
				_, err := e.guardCall(ctx, dup, spec, c.name, fn)
				var rec *idem.RecordedError
				if !errors.As(err, &rec) || !errors.Is(err, idem.ErrResultNotEncodable) {
					t.Errorf("duplicate: err = %v, want a *RecordedError matching ErrResultNotEncodable", err)
				}
			}
			if n := runs.Load(); n != 1 {
				t.Errorf("fn ran %d times, want 1", n)
			}
		})
	}
}

// ignoresCtx is a store whose Claim ignores ctx and answers late, like a
// go-redis client without ContextTimeoutEnabled on a slow link.
type ignoresCtx struct {
	idemstore.Store
	delay time.Duration
}

func (s ignoresCtx) Claim(ctx context.Context, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	time.Sleep(s.delay)
	return s.Store.Claim(context.WithoutCancel(ctx), req)
}

// testCtxEndsDuringClaim: a claim that comes back after the caller's ctx
// ended must not run fn (with a ctx already done, for nobody), and must
// give the key back so the caller's retry runs.
func testCtxEndsDuringClaim(t *testing.T, e *env) {
	spec := e.spec("CtxEndsDuringClaim")
	var runs atomic.Int64
	fn := func(context.Context) (any, error) { runs.Add(1); return "ran", nil }
	slow := idem.NewGuard(ignoresCtx{Store: e.s, delay: 150 * time.Millisecond})
	cctx, cancel := context.WithTimeout(ctx, 60*time.Millisecond)
	defer cancel()
	_, err := e.guardCall(cctx, slow, spec, "k", fn)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("fn ran %d times with its ctx already past the deadline, want 0", n)
	}
	v, err := e.guardCall(ctx, idem.NewGuard(e.s), spec, "k", fn)
	if err != nil || v != "ran" {
		t.Fatalf("retry: %v, %v; want the key given back and fn run", v, err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("fn ran %d times, want 1", n)
	}
}

// lostReply applies a claim and then loses its reply, once per key.
type lostReply struct {
	idemstore.Store
	lost atomic.Int64
}

var errReplyLost = errors.New("idemtest: connection reset before the claim's reply")

func (s *lostReply) Claim(ctx context.Context, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	res, err := s.Store.Claim(ctx, req)
	if err == nil && (res.Status == idemstore.ClaimAcquired || res.Status == idemstore.ClaimTakenOver) && s.lost.Add(1) == 1 {
		return idemstore.ClaimResult{}, errReplyLost
	}
	return res, err
}

// testLostClaimReply: a claim the store applied but whose reply never
// arrived must not strand the key for a whole lease (30s here): the Guard
// recognises its own token and gives the claim back, for its own next
// attempt at once and for other processes shortly after.
func testLostClaimReply(t *testing.T, e *env) {
	for _, retryFrom := range []string{"SameGuard", "OtherGuard"} {
		t.Run(retryFrom, func(t *testing.T) {
			spec := e.spec("LostClaimReply" + retryFrom)
			var runs atomic.Int64
			fn := func(context.Context) (any, error) { runs.Add(1); return "ran", nil }
			g := idem.NewGuard(&lostReply{Store: e.s})
			_, err := e.guardCall(ctx, g, spec, retryFrom, fn)
			if !errors.Is(err, idem.ErrStoreUnavailable) || runs.Load() != 0 {
				t.Fatalf("lost reply: err = %v, runs = %d; want ErrStoreUnavailable and no run", err, runs.Load())
			}
			retry := g
			if retryFrom == "OtherGuard" {
				retry = idem.NewGuard(e.s)
			}
			deadline := time.Now().Add(5 * time.Second) // far inside the 30s lease
			for {
				v, err := e.guardCall(ctx, retry, spec, retryFrom, fn)
				if err == nil {
					if v != "ran" {
						t.Fatalf("retry got %v", v)
					}
					break
				}
				if !errors.Is(err, idem.ErrInProgress) || time.Now().After(deadline) {
					t.Fatalf("retry: %v; want the orphaned claim given back within 5s of a 30s lease", err)
				}
				if retryFrom == "SameGuard" {
					t.Fatalf("retry from the claiming Guard: %v; want its own orphaned claim taken back at once", err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if n := runs.Load(); n != 1 {
				t.Errorf("fn ran %d times, want 1", n)
			}
		})
	}
}

// testGoexit: runtime.Goexit in fn (t.Fatal in a test that calls a
// wrapper) releases the key and lets the goroutine exit; it used to crash
// the process with a *runtime.PanicNilError.
func testGoexit(t *testing.T, e *env) {
	spec := e.spec("Goexit")
	g := idem.NewGuard(e.s)
	var runs atomic.Int64
	done := make(chan struct{})
	returned := false
	go func() {
		defer close(done)
		_, _ = e.guardCall(ctx, g, spec, "k", func(context.Context) (any, error) {
			runs.Add(1)
			runtime.Goexit()
			return nil, nil
		})
		returned = true
	}()
	<-done
	if returned {
		t.Fatal("Do returned after fn called runtime.Goexit; the goroutine should have exited")
	}
	v, err := e.guardCall(ctx, g, spec, "k", func(context.Context) (any, error) { runs.Add(1); return "again", nil })
	if err != nil || v != "again" {
		t.Fatalf("after Goexit: %v, %v; want the key released and fn run again", v, err)
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("fn ran %d times, want 2 (Goexit, then the retry)", n)
	}
}

// corrupt answers every claim of the env's keys as a store that found a
// malformed record would.
type corrupt struct{ idemstore.Store }

func (corrupt) Claim(context.Context, idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	return idemstore.ClaimResult{}, fmt.Errorf("idemtest: %w: bad magic byte", idem.ErrCorruptRecord)
}

// testCorruptNeverFailsOpen: fail-open is for a store that cannot be
// reached; a reachable store holding a malformed record is
// ErrCorruptRecord, never a reason to run fn unguarded.
func testCorruptNeverFailsOpen(t *testing.T, e *env) {
	spec := e.spec("CorruptFailOpen")
	var runs atomic.Int64
	fn := func(context.Context) (any, error) { runs.Add(1); return "ran", nil }
	g := idem.NewGuard(corrupt{e.s}, idem.WithFailOpen())
	for i := 0; i < 3; i++ {
		_, err := e.guardCall(ctx, g, spec, "k", fn)
		if !errors.Is(err, idem.ErrCorruptRecord) {
			t.Fatalf("call %d: err = %v, want ErrCorruptRecord", i, err)
		}
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("fn ran %d times unguarded over a corrupt record, want 0", n)
	}
	if e.corrupt == nil {
		t.Logf("Harness.Corrupt is nil: no real malformed record was planted in %T", e.s)
		return
	}
	// A real malformed record, planted by the store's own harness at the
	// key a call uses: the store itself must say corrupt, in Claim and in
	// Get alike (one decoder, one verdict), and fail-open must not run.
	c, k := idemimpl.Begin(g, spec)
	k.Key().String(e.key)
	k.Key().String("planted")
	key, err := c.StoreKey()
	if err != nil {
		t.Fatal(err)
	}
	// A record the store wrote itself, then damaged in place.
	if _, err := e.guardCall(ctx, idem.NewGuard(e.s), spec, "planted", func(context.Context) (any, error) { return "first", nil }); err != nil {
		t.Fatal(err)
	}
	e.corrupt(t, e.s, key)
	real := idem.NewGuard(e.s, idem.WithFailOpen())
	if _, err := e.guardCall(ctx, real, spec, "planted", fn); !errors.Is(err, idem.ErrCorruptRecord) {
		t.Errorf("Do over a planted malformed record: %v, want ErrCorruptRecord", err)
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("fn ran %d times over a planted malformed record, want 0", n)
	}
	if _, err := e.s.Claim(ctx, e.req(key, e.token(), fp("a"))); !errors.Is(err, idem.ErrCorruptRecord) {
		t.Errorf("Claim over a planted malformed record: %v, want ErrCorruptRecord", err)
	}
	if _, err := e.s.Get(ctx, key); !errors.Is(err, idem.ErrCorruptRecord) {
		t.Errorf("Get of a planted malformed record: %v, want ErrCorruptRecord", err)
	}
}
