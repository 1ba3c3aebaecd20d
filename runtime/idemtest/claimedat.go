package idemtest

import (
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Record.ClaimedAt: set by the claim that acquires (a new claim or a
// takeover), by the store's clock; kept by every later write of that
// ownership.
var claimedAtCases = []suiteCase{
	{"ClaimedAtSetOnClaim", testClaimedAtSet},
	{"ClaimedAtKeptByHeartbeat", testClaimedAtHeartbeat},
	{"ClaimedAtKeptByFinish", testClaimedAtFinish},
	{"ClaimedAtMovedByTakeover", testClaimedAtTakeover},
	{"ClaimedAtMovedByReclaimAfterRelease", testClaimedAtReclaim},
	{"LegacyRecordWithoutClaimedAt", testClaimedAtLegacy},
}

var adminClaimedAtCases = []suiteCase{
	{"AdminClaimedAt", testAdminClaimedAt},
}

// claimedAt returns key's ClaimedAt and fails unless it is set.
func (e *env) claimedAt(key string) time.Time {
	e.t.Helper()
	r := e.get(key)
	if r.ClaimedAt.IsZero() {
		e.t.Fatalf("Get(%s): %v record has no ClaimedAt", key, r.State)
	}
	return r.ClaimedAt
}

// sameInstant fails unless got and want are the same instant.
func sameInstant(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Fatalf("%s: ClaimedAt %v, want it unchanged at %v (moved by %v)", what, got, want, got.Sub(want))
	}
}

func testClaimedAtSet(t *testing.T, e *env) {
	before := time.Now()
	e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	r := e.get(e.key)
	if r.ClaimedAt.IsZero() {
		t.Fatal("a claimed record has no ClaimedAt")
	}
	// The claim is the record's only write so far: its time is both.
	if !r.ClaimedAt.Equal(r.UpdatedAt) {
		t.Fatalf("after a claim ClaimedAt %v differs from UpdatedAt %v", r.ClaimedAt, r.UpdatedAt)
	}
	if r.ClaimedAt.After(r.LeaseUntil) {
		t.Fatalf("ClaimedAt %v is after the lease expiry %v", r.ClaimedAt, r.LeaseUntil)
	}
	// Sane by the caller's clock too: a store's clock (a server's) may be
	// skewed, but not by minutes.
	ref, slack := before, time.Minute
	if e.clock != nil {
		ref, slack = e.clock.Now(), time.Second
	}
	if d := r.ClaimedAt.Sub(ref); d < -slack || d > slack {
		t.Fatalf("ClaimedAt %v is %v from the claim's time %v", r.ClaimedAt, d, ref)
	}
}

func testClaimedAtHeartbeat(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	c0 := e.claimedAt(e.key)
	for i := 0; i < 2; i++ {
		e.advance(e.lease / 3)
		if err := e.s.Heartbeat(ctx, l); err != nil {
			t.Fatalf("heartbeat %d: %v", i, err)
		}
		r := e.get(e.key)
		sameInstant(t, "after a heartbeat", r.ClaimedAt, c0)
		if !r.UpdatedAt.After(c0) {
			t.Fatalf("after a heartbeat UpdatedAt %v did not move past the claim's %v", r.UpdatedAt, c0)
		}
	}
}

func testClaimedAtFinish(t *testing.T, e *env) {
	for _, f := range []struct {
		name string
		do   func(l idemstore.Lease) error
	}{
		{"complete", func(l idemstore.Lease) error { return e.s.Complete(ctx, l, idemstore.Result{Data: []byte(`1`)}) }},
		{"fail", func(l idemstore.Lease) error { return e.s.Fail(ctx, l, idemstore.Result{Data: []byte(`1`)}) }},
		{"release", func(l idemstore.Lease) error { return e.s.Release(ctx, l) }},
	} {
		t.Run(f.name, func(t *testing.T) {
			key := e.key + ":" + f.name
			l := e.mustOwn(key, fp("a"), idemstore.ClaimAcquired)
			c0 := e.claimedAt(key)
			e.advance(e.lease / 3)
			if err := e.s.Heartbeat(ctx, l); err != nil {
				t.Fatal(err)
			}
			e.advance(e.lease / 3)
			if err := f.do(l); err != nil {
				t.Fatal(err)
			}
			sameInstant(t, "after "+f.name, e.get(key).ClaimedAt, c0)
		})
	}
}

func testClaimedAtTakeover(t *testing.T, e *env) {
	e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	c0 := e.claimedAt(e.key)
	e.advance(e.pastLease())
	e.mustOwn(e.key, fp("a"), idemstore.ClaimTakenOver)
	r := e.get(e.key)
	if d := r.ClaimedAt.Sub(c0); d < e.lease {
		t.Fatalf("after a takeover %v past the lease, ClaimedAt moved by %v (from %v to %v); want the new owner's claim time", e.pastLease(), d, c0, r.ClaimedAt)
	}
	if !r.ClaimedAt.Equal(r.UpdatedAt) {
		t.Fatalf("after a takeover ClaimedAt %v differs from UpdatedAt %v", r.ClaimedAt, r.UpdatedAt)
	}
}

func testClaimedAtReclaim(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	c0 := e.claimedAt(e.key)
	if err := e.s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	e.advance(e.lease / 2)
	e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	r := e.get(e.key)
	if !r.ClaimedAt.After(c0) || !r.ClaimedAt.Equal(r.UpdatedAt) {
		t.Fatalf("claim after a release: ClaimedAt %v (UpdatedAt %v), want the new claim's time, after %v", r.ClaimedAt, r.UpdatedAt, c0)
	}
}

func testAdminClaimedAt(t *testing.T, e *env) {
	a := e.s.(idemstore.Admin)
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	c0 := e.claimedAt(e.key)
	e.advance(e.lease / 3)
	if err := e.s.Heartbeat(ctx, l); err != nil {
		t.Fatal(err)
	}
	var listed []idemstore.Record
	if err := a.List(ctx, e.key, func(r idemstore.Record) error { listed = append(listed, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 {
		t.Fatalf("List found %d records, want 1", len(listed))
	}
	sameInstant(t, "List", listed[0].ClaimedAt, c0)
	r, err := a.ForceRelease(ctx, e.key)
	if err != nil {
		t.Fatal(err)
	}
	sameInstant(t, "ForceRelease's record", r.ClaimedAt, c0)
	sameInstant(t, "Get after ForceRelease", e.get(e.key).ClaimedAt, c0)
}

// legacySane fails unless r, a record rewritten in the store's previous
// format, has a zero ClaimedAt or one no later than its UpdatedAt.
func legacySane(t *testing.T, what string, r idemstore.Record) {
	t.Helper()
	if !r.ClaimedAt.IsZero() && r.ClaimedAt.After(r.UpdatedAt) {
		t.Fatalf("%s: legacy record's ClaimedAt %v is after its UpdatedAt %v", what, r.ClaimedAt, r.UpdatedAt)
	}
}

func testClaimedAtLegacy(t *testing.T, e *env) {
	if e.legacy == nil {
		t.Skipf("Harness.Legacy is nil: %T has no earlier record format to plant", e.s)
	}
	t.Run("in_progress", func(t *testing.T) {
		key := e.key + ":running"
		l := e.mustOwn(key, fp("a"), idemstore.ClaimAcquired)
		e.legacy(t, e.s, key)
		r := e.get(key)
		if r.State != idemstore.StateInProgress || r.Owner != l.Owner || r.Fence != l.Fence {
			t.Fatalf("legacy record reads as %v owner %v fence %d; want in progress, owner %v fence %d", r.State, r.Owner, r.Fence, l.Owner, l.Fence)
		}
		legacySane(t, "Get", r)
		if _, res := e.claim(key, fp("a")); res.Status != idemstore.ClaimInProgress {
			t.Fatalf("duplicate of a legacy in-progress record = %v, want in_progress", res.Status)
		}
		e.advance(e.lease / 3)
		if err := e.s.Heartbeat(ctx, l); err != nil {
			t.Fatalf("heartbeat of a legacy record: %v", err)
		}
		legacySane(t, "after a heartbeat", e.get(key))
		if err := e.s.Complete(ctx, l, idemstore.Result{Data: []byte(`1`)}); err != nil {
			t.Fatalf("completion of a legacy record: %v", err)
		}
		legacySane(t, "after completion", e.get(key))
		if _, res := e.claim(key, fp("a")); res.Status != idemstore.ClaimCompleted || string(res.Result.Data) != "1" {
			t.Fatalf("replay = %v %q, want completed 1", res.Status, res.Result.Data)
		}
	})
	t.Run("completed", func(t *testing.T) {
		key := e.key + ":done"
		l := e.mustOwn(key, fp("a"), idemstore.ClaimAcquired)
		if err := e.s.Complete(ctx, l, idemstore.Result{Data: []byte(`"x"`)}); err != nil {
			t.Fatal(err)
		}
		e.legacy(t, e.s, key)
		legacySane(t, "Get", e.get(key))
		if _, res := e.claim(key, fp("a")); res.Status != idemstore.ClaimCompleted || string(res.Result.Data) != `"x"` {
			t.Fatalf("replay of a legacy record = %v %q, want completed \"x\"", res.Status, res.Result.Data)
		}
		if a, ok := e.s.(idemstore.Admin); ok {
			n := 0
			if err := a.List(ctx, key, func(r idemstore.Record) error { n++; legacySane(t, "List", r); return nil }); err != nil || n != 1 {
				t.Fatalf("List of a legacy record: %d records, %v", n, err)
			}
		}
	})
	t.Run("takeover", func(t *testing.T) {
		key := e.key + ":crashed"
		e.mustOwn(key, fp("a"), idemstore.ClaimAcquired)
		e.legacy(t, e.s, key)
		e.advance(e.pastLease())
		e.mustOwn(key, fp("a"), idemstore.ClaimTakenOver)
		if r := e.get(key); r.ClaimedAt.IsZero() || !r.ClaimedAt.Equal(r.UpdatedAt) {
			t.Fatalf("takeover of a legacy record: ClaimedAt %v, UpdatedAt %v; want the takeover's time in both", r.ClaimedAt, r.UpdatedAt)
		}
	})
}
