package idemtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Cases for what a key remembers: a retained record keeps the first
// claim's fingerprint whatever its state, so a key reused with another
// payload is a mismatch until the record is gone. The dangerous case is a
// crashed owner: payload A may have charged the card before the process
// died, and a claim with payload B must not run a second, different
// charge under the same key once A's lease expires.
var retentionCases = []suiteCase{
	{"RetentionCrashedOwnerKeepsFingerprint", testRetentionCrashed},
	{"RetentionReleasedKeepsFingerprint", testRetentionReleased},
	{"RetentionFinishedKeepsFingerprint", testRetentionFinished},
	{"RetentionForceReleaseKeepsFingerprint", testRetentionForceRelease},
	{"RetentionForceReleasePastRetentionIsNotFound", testRetentionForceReleaseExpired},
	{"RetentionExpiredRecordForgetsFingerprint", testRetentionExpired},
	{"RetentionGuardOtherPayloadNeverRuns", testRetentionGuard},
	{"RetentionOrderedClaim", testRetentionOrdered},
}

// mismatchChangesNothing claims key with f, which differs from the
// retained record's fingerprint, and wants ClaimMismatch with the record's
// fence and the record exactly as before (owner, fence, fingerprint,
// lease, expiry: a refused claim must not extend or shorten anything).
func (e *env) mismatchChangesNothing(key string, f idemstore.Fingerprint) {
	e.t.Helper()
	before := e.get(key)
	_, res := e.claim(key, f)
	if res.Status != idemstore.ClaimMismatch || res.Fence != before.Fence {
		e.t.Fatalf("claim with another payload of a %v record = %v fence %d, want mismatch fence %d",
			before.State, res.Status, res.Fence, before.Fence)
	}
	if diff := cmp.Diff(before, e.get(key)); diff != "" {
		e.t.Fatalf("a mismatched claim changed the record (-before +after):\n%s", diff)
	}
}

// holds checks the parts of the record a mismatch is about.
func (e *env) holds(key string, state idemstore.State, l idemstore.Lease, f idemstore.Fingerprint) {
	e.t.Helper()
	r := e.get(key)
	type view struct {
		State idemstore.State
		Owner idemstore.Token
		Fence uint64
		FP    idemstore.Fingerprint
	}
	want := view{state, l.Owner, l.Fence, f}
	if state == idemstore.StateReleased {
		want.Owner = r.Owner // stores differ in what a released record's owner reads as
	}
	if diff := cmp.Diff(want, view{r.State, r.Owner, r.Fence, r.Fingerprint}); diff != "" {
		e.t.Fatalf("record (-want +got):\n%s", diff)
	}
}

// testRetentionCrashed: the owner claimed with A and died (no heartbeat,
// no release). Past its lease the key may be taken over, but only by A.
func testRetentionCrashed(t *testing.T, e *env) {
	dead := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	e.advance(e.pastLease())
	e.holds(e.key, idemstore.StateInProgress, dead, fp("a"))
	e.mismatchChangesNothing(e.key, fp("b"))
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimTakenOver)
	e.newerFence(l.Fence, dead.Fence, "after takeover")
	e.holds(e.key, idemstore.StateInProgress, l, fp("a"))
	// The new owner's live lease refuses B as before.
	e.mismatchChangesNothing(e.key, fp("b"))
}

// testRetentionReleased: A failed under on_failure=unlock and released the
// key. A retry of A runs again; B is still a mismatch.
func testRetentionReleased(t *testing.T, e *env) {
	first := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	if err := e.s.Release(ctx, first); err != nil {
		t.Fatal(err)
	}
	e.holds(e.key, idemstore.StateReleased, first, fp("a"))
	e.mismatchChangesNothing(e.key, fp("b"))
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	e.newerFence(l.Fence, first.Fence, "after release")
	e.holds(e.key, idemstore.StateInProgress, l, fp("a"))
	// Released again, after a lease's worth of time: still A's key.
	if err := e.s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	e.advance(e.pastLease())
	e.mismatchChangesNothing(e.key, fp("b"))
	e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
}

// testRetentionFinished: completed and failed records were mismatches
// before; they still are, and the refused claim changes nothing.
func testRetentionFinished(t *testing.T, e *env) {
	tests := []struct {
		name   string
		finish func(l idemstore.Lease) error
		state  idemstore.State
		want   idemstore.ClaimStatus
	}{
		{"completed", func(l idemstore.Lease) error { return e.s.Complete(ctx, l, idemstore.Result{Data: []byte(`"a"`)}) },
			idemstore.StateCompleted, idemstore.ClaimCompleted},
		{"failed", func(l idemstore.Lease) error { return e.s.Fail(ctx, l, idemstore.Result{Data: []byte(`"declined"`)}) },
			idemstore.StateFailed, idemstore.ClaimFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := e.sub(t)
			key := e.key + ":" + tt.name
			l := e.mustOwn(key, fp("a"), idemstore.ClaimAcquired)
			if err := tt.finish(l); err != nil {
				t.Fatal(err)
			}
			e.holds(key, tt.state, l, fp("a"))
			e.mismatchChangesNothing(key, fp("b"))
			if _, res := e.claim(key, fp("a")); res.Status != tt.want || res.Fence != l.Fence {
				t.Fatalf("claim with the first payload = %v fence %d, want %v fence %d", res.Status, res.Fence, tt.want, l.Fence)
			}
		})
	}
}

// testRetentionForceRelease: an operator's ForceRelease frees the key for
// a retry of the same payload, not for another one: reusing a key with a
// new payload takes deleting its record.
func testRetentionForceRelease(t *testing.T, e *env) {
	a, ok := e.s.(idemstore.Admin)
	if !ok {
		t.Skipf("%T does not implement idemstore.Admin (a capability of the store, not a missing service: the same under CI)", e.s)
	}
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	r, err := a.ForceRelease(ctx, e.key)
	if err == nil && r.Fence <= l.Fence {
		t.Fatalf("ForceRelease fence %d, want > %d", r.Fence, l.Fence)
	}
	if err != nil {
		t.Fatal(err)
	}
	if r.Fingerprint != fp("a") {
		t.Fatalf("ForceRelease returned fingerprint %v, want the first claim's %v", r.Fingerprint, fp("a"))
	}
	e.mismatchChangesNothing(e.key, fp("b"))
	if l2 := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired); l2.Fence <= r.Fence {
		t.Fatalf("fence after force release = %d, want > %d", l2.Fence, r.Fence)
	}
	if err := e.s.Delete(ctx, e.key); err != nil {
		t.Fatal(err)
	}
	e.mustOwn(e.key, fp("b"), idemstore.ClaimAcquired)
}

// testRetentionForceReleaseExpired: a record past its retention is gone;
// an operator's ForceRelease must not revive it (with its old fingerprint
// and a fresh retention, which would refuse the next payload).
func testRetentionForceReleaseExpired(t *testing.T, e *env) {
	a, ok := e.s.(idemstore.Admin)
	if !ok {
		t.Skipf("%T does not implement idemstore.Admin (a capability of the store, not a missing service: the same under CI)", e.s)
	}
	e.completed(e.key)
	e.advance(e.ttl + e.ttl/4 + 50*time.Millisecond)
	if _, err := a.ForceRelease(ctx, e.key); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("ForceRelease past retention = %v, want ErrNotFound", err)
	}
	e.mustOwn(e.key, fp("b"), idemstore.ClaimAcquired)
}

// testRetentionExpired: past its retention a record is gone and forgets
// its fingerprint; any payload acquires. For an abandoned in-progress
// record the retention is its lease plus the claim's TTL.
func testRetentionExpired(t *testing.T, e *env) {
	running, released := e.key+":running", e.key+":released"
	e.mustOwn(running, fp("a"), idemstore.ClaimAcquired)
	l := e.mustOwn(released, fp("a"), idemstore.ClaimAcquired)
	if err := e.s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	// Halfway through the retention both still remember A.
	e.advance(e.pastLease())
	e.mismatchChangesNothing(running, fp("b"))
	e.mismatchChangesNothing(released, fp("b"))
	e.advance(e.lease + e.ttl)
	for _, key := range []string{running, released} {
		if _, err := e.s.Get(ctx, key); !errors.Is(err, idem.ErrNotFound) {
			t.Fatalf("Get(%s) past its retention = %v, want ErrNotFound", key, err)
		}
		l := e.mustOwn(key, fp("b"), idemstore.ClaimAcquired)
		e.holds(key, idemstore.StateInProgress, l, fp("b"))
	}
}

// sub is e for a subtest: the same store and clock, reporting to t.
func (e *env) sub(t *testing.T) *env {
	return &env{t: t, s: e.s, clock: e.clock, lease: e.lease, ttl: e.ttl, key: e.key}
}

// dyingStore is a process that dies right after its claim: the claim
// reaches the store, nothing after it does (no heartbeat, completion or
// release).
type dyingStore struct{ idemstore.Store }

func (dyingStore) Heartbeat(context.Context, idemstore.Lease) error                  { return nil }
func (dyingStore) Complete(context.Context, idemstore.Lease, idemstore.Result) error { return nil }
func (dyingStore) Fail(context.Context, idemstore.Lease, idemstore.Result) error     { return nil }
func (dyingStore) Release(context.Context, idemstore.Lease) error                    { return nil }

// outcomes records a Guard's final and takeover outcomes.
type outcomes struct {
	mu  sync.Mutex
	got []idem.Outcome
}

func (o *outcomes) Observe(ev idem.Event) {
	if ev.Final || ev.Outcome == idem.OutcomeTakeover {
		o.mu.Lock()
		o.got = append(o.got, ev.Outcome)
		o.mu.Unlock()
	}
}

func (o *outcomes) take() []idem.Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	got := o.got
	o.got = nil
	return got
}

// testRetentionGuard drives both cases through Guards, as a service does:
// the function called with payload B never runs, and a retry of A takes
// the key over (crash) or runs again (release).
func testRetentionGuard(t *testing.T, e *env) {
	spec := &idem.Spec{Name: "idemtest.Retention", Lease: e.lease, TTL: e.ttl}
	var runs [2]atomic.Int64 // per payload: A, B
	fail := errors.New("card declined")
	do := func(g *idem.Guard, key string, payload int, err error) (string, error) {
		c, k := idemimpl.Begin(g, spec)
		k.Key().String(key)
		k.Payload().String(string(rune('A' + payload)))
		return idem.Do(ctx, c, func(ctx context.Context) (string, error) {
			n := runs[payload].Add(1)
			return fmt.Sprintf("%c run %d", 'A'+payload, n), err
		})
	}
	const a, b = 0, 1
	tests := []struct {
		name string
		// first leaves the key to A: a dead owner's expired lease, or a
		// release after a failure.
		first     func(key string)
		wantRetry []idem.Outcome
	}{
		{"crashed owner", func(key string) {
			if _, err := do(idem.NewGuard(dyingStore{e.s}), key, a, nil); err != nil {
				t.Fatalf("the dying process's call: %v", err)
			}
			e.advance(e.pastLease())
		}, []idem.Outcome{idem.OutcomeTakeover, idem.OutcomeExecuted}},
		{"released after failure", func(key string) {
			if _, err := do(idem.NewGuard(e.s), key, a, fail); !errors.Is(err, fail) {
				t.Fatalf("the failing call = %v, want its own error", err)
			}
		}, []idem.Outcome{idem.OutcomeExecuted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := e.key + ":" + tt.name
			runs[a].Store(0)
			runs[b].Store(0)
			tt.first(key)
			obs := &outcomes{}
			g := idem.NewGuard(e.s, idem.WithObserver(obs))
			if v, err := do(g, key, b, nil); !errors.Is(err, idem.ErrPayloadMismatch) {
				t.Fatalf("payload B = %q, %v; want ErrPayloadMismatch", v, err)
			}
			v, err := do(g, key, a, nil)
			if err != nil || v != "A run 2" {
				t.Fatalf("retry of payload A = %q, %v; want it to run (A run 2)", v, err)
			}
			if v, err := do(g, key, b, nil); !errors.Is(err, idem.ErrPayloadMismatch) {
				t.Fatalf("payload B after A's retry = %q, %v; want ErrPayloadMismatch", v, err)
			}
			if v, err := do(g, key, a, nil); err != nil || v != "A run 2" {
				t.Fatalf("payload A again = %q, %v; want the replay of A run 2", v, err)
			}
			want := append(append([]idem.Outcome{idem.OutcomeMismatch}, tt.wantRetry...), idem.OutcomeMismatch, idem.OutcomeReplayed)
			if diff := cmp.Diff(want, obs.take()); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			if n := runs[b].Load(); n != 0 {
				t.Errorf("the function ran %d times with payload B, want never", n)
			}
			if n := runs[a].Load(); n != 2 {
				t.Errorf("the function ran %d times with payload A, want 2 (the lost run, the retry)", n)
			}
		})
	}
}

// testRetentionOrdered: an ordered claim (stores that implement
// idemstore.Orderer) follows the same rule, and a refused one does not advance
// the entity either.
func testRetentionOrdered(t *testing.T, e *env) {
	if o, ok := e.s.(idemstore.Orderer); !ok || !o.SupportsOrdering() {
		t.Skipf("%T does not support ordering (a capability of the store, not a missing service: the same under CI)", e.s)
	}
	entity := e.key + ":{entity}"
	claim := func(key string, f idemstore.Fingerprint, at time.Time) (idemstore.Lease, idemstore.ClaimResult) {
		t.Helper()
		owner := e.token()
		req := e.req(key, owner, f)
		req.Order = idemstore.OrderClaim{Key: entity, At: at}
		res, err := e.s.Claim(ctx, req)
		if err != nil {
			t.Fatalf("ordered Claim(%s): %v", key, err)
		}
		return idemstore.Lease{Key: key, Owner: owner, Fence: res.Fence, Duration: e.lease, TTL: e.ttl}, res
	}
	crashed, released := entity+":evt:crashed", entity+":evt:released"
	if _, res := claim(crashed, fp("a"), base); res.Status != idemstore.ClaimAcquired {
		t.Fatalf("first ordered claim = %v", res.Status)
	}
	l, res := claim(released, fp("a"), base)
	if res.Status != idemstore.ClaimAcquired {
		t.Fatalf("first ordered claim = %v", res.Status)
	}
	if err := e.s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	e.advance(e.pastLease())
	for _, key := range []string{crashed, released} {
		before := e.get(key)
		// B comes with a later event time: were it accepted, it would move
		// the entity past A's retry.
		if _, res := claim(key, fp("b"), base.Add(time.Hour)); res.Status != idemstore.ClaimMismatch || res.Fence != before.Fence {
			t.Fatalf("ordered claim of %s with another payload = %v fence %d, want mismatch fence %d", key, res.Status, res.Fence, before.Fence)
		}
		if diff := cmp.Diff(before, e.get(key)); diff != "" {
			t.Fatalf("a mismatched ordered claim changed the record (-before +after):\n%s", diff)
		}
	}
	if _, res := claim(crashed, fp("a"), base); res.Status != idemstore.ClaimTakenOver {
		t.Fatalf("ordered retry of the crashed call = %v, want taken_over (the entity must not have moved)", res.Status)
	}
	if _, res := claim(released, fp("a"), base); res.Status != idemstore.ClaimAcquired {
		t.Fatalf("ordered retry of the released call = %v, want acquired", res.Status)
	}
}
