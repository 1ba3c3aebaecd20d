package idemtest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Cases for stores that implement idemstore.Orderer; the suite runs them only
// for those.
var orderCases = []suiteCase{
	{"OrderRejectsOlder", testOrderRejectsOlder},
	{"OrderGraceAndEqual", testOrderGrace},
	{"OrderReplayIsNotAnOrderError", testOrderReplay},
	{"OrderOverride", testOrderOverride},
	{"OrderConcurrentNeverBothPass", testOrderConcurrent},
}

// Cases for stores that implement idemstore.Admin.
var adminCases = []suiteCase{
	{"AdminListAndCleanup", testAdminList},
	{"AdminForceReleaseFencesOutTheOwner", testAdminForceRelease},
}

var base = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func (e *env) orderReq(id string, at time.Time, grace time.Duration) idemstore.ClaimRequest {
	// As the Guard does: the call key carries its entity's hash tag, so a
	// sharded store keeps both in one slot.
	r := e.req(e.key+":{entity}:evt:"+id, e.token(), fp(id))
	r.Order = idemstore.OrderClaim{Key: e.key + ":{entity}", At: at, Grace: grace}
	return r
}

func (e *env) orderClaim(id string, at time.Time, grace time.Duration) idemstore.ClaimResult {
	e.t.Helper()
	res, err := e.s.Claim(ctx, e.orderReq(id, at, grace))
	if err != nil {
		e.t.Fatalf("Claim(%s): %v", id, err)
	}
	return res
}

func testOrderRejectsOlder(t *testing.T, e *env) {
	tests := []struct {
		id   string
		at   time.Time
		want idemstore.ClaimStatus
	}{
		{"a", base, idemstore.ClaimAcquired},
		{"b", base.Add(time.Minute), idemstore.ClaimAcquired},
		{"c", base.Add(30 * time.Second), idemstore.ClaimOutOfOrder},
		{"d", base.Add(2 * time.Minute), idemstore.ClaimAcquired},
		{"e", base, idemstore.ClaimOutOfOrder},
	}
	for _, tt := range tests {
		res := e.orderClaim(tt.id, tt.at, 0)
		if res.Status != tt.want {
			t.Fatalf("event %s at %v = %v, want %v", tt.id, tt.at, res.Status, tt.want)
		}
		if tt.want == idemstore.ClaimOutOfOrder && !res.LastAccepted.Equal(base.Add(time.Minute)) && !res.LastAccepted.Equal(base.Add(2*time.Minute)) {
			t.Fatalf("out-of-order claim reports last accepted %v", res.LastAccepted)
		}
	}
	// A rejected event left nothing behind.
	if _, err := e.s.Get(ctx, e.key+":{entity}:evt:c"); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("rejected event has a record: %v", err)
	}
}

func testOrderGrace(t *testing.T, e *env) {
	grace := 5 * time.Minute
	tests := []struct {
		id   string
		at   time.Time
		want idemstore.ClaimStatus
	}{
		{"a", base, idemstore.ClaimAcquired},
		{"equal", base, idemstore.ClaimAcquired},
		{"within-grace", base.Add(-4 * time.Minute), idemstore.ClaimAcquired},
		{"at-grace-edge", base.Add(-5 * time.Minute), idemstore.ClaimAcquired},
		{"beyond-grace", base.Add(-6 * time.Minute), idemstore.ClaimOutOfOrder},
	}
	for _, tt := range tests {
		if res := e.orderClaim(tt.id, tt.at, grace); res.Status != tt.want {
			t.Fatalf("event %s at %v = %v, want %v", tt.id, tt.at, res.Status, tt.want)
		}
	}
}

func testOrderReplay(t *testing.T, e *env) {
	req := e.orderReq("a", base, 0)
	res, err := e.s.Claim(ctx, req)
	if err != nil || res.Status != idemstore.ClaimAcquired {
		t.Fatalf("claim a = %v, %v", res.Status, err)
	}
	l := idemstore.Lease{Key: req.Key, Owner: req.Owner, Fence: res.Fence, Duration: e.lease, TTL: e.ttl}
	if err := e.s.Complete(ctx, l, idemstore.Result{Data: []byte(`"a"`)}); err != nil {
		t.Fatal(err)
	}
	if res := e.orderClaim("b", base.Add(time.Hour), 0); res.Status != idemstore.ClaimAcquired {
		t.Fatalf("later event = %v", res.Status)
	}
	// The old event again: a replay of its result, not an ordering error.
	again := e.orderReq("a", base, 0)
	res, err = e.s.Claim(ctx, again)
	if err != nil || res.Status != idemstore.ClaimCompleted || string(res.Result.Data) != `"a"` {
		t.Fatalf("replayed event = %v %q, %v; want completed", res.Status, res.Result.Data, err)
	}
}

func testOrderOverride(t *testing.T, e *env) {
	e.orderClaim("a", base.Add(time.Hour), 0)
	r := e.orderReq("old", base, 0)
	r.Order.Override = true
	res, err := e.s.Claim(ctx, r)
	if err != nil || res.Status != idemstore.ClaimAcquired {
		t.Fatalf("override claim = %v, %v; want acquired", res.Status, err)
	}
	// The override did not move the entity back in time.
	if res := e.orderClaim("b", base.Add(30*time.Minute), 0); res.Status != idemstore.ClaimOutOfOrder {
		t.Fatalf("event between the two after an override = %v, want out_of_order", res.Status)
	}
}

func testOrderConcurrent(t *testing.T, e *env) {
	// Rounds of a newer and an older event racing for one entity. The
	// older may pass only by claiming first; whatever happened, the
	// entity's last accepted time must end at the newer event: a store
	// whose check and advance are not one atomic step lets both read the
	// same last time and may leave the older one as the last.
	for round := 0; round < 50; round++ {
		newer := base.Add(time.Duration(round+1) * time.Hour)
		older := newer.Add(-30 * time.Minute)
		var wg sync.WaitGroup
		var sn, so idemstore.ClaimStatus
		wg.Add(2)
		go func() { defer wg.Done(); sn = e.orderClaim(fmt.Sprintf("n%d", round), newer, 0).Status }()
		go func() { defer wg.Done(); so = e.orderClaim(fmt.Sprintf("o%d", round), older, 0).Status }()
		wg.Wait()
		if sn != idemstore.ClaimAcquired {
			t.Fatalf("round %d: the newer event = %v, want acquired", round, sn)
		}
		if so != idemstore.ClaimAcquired && so != idemstore.ClaimOutOfOrder {
			t.Fatalf("round %d: the older event = %v", round, so)
		}
		if res := e.orderClaim(fmt.Sprintf("probe%d", round), older.Add(time.Minute), 0); res.Status != idemstore.ClaimOutOfOrder {
			t.Fatalf("round %d: after both events the entity accepts a time older than the newer event (%v)", round, res.Status)
		}
	}
}

func testAdminList(t *testing.T, e *env) {
	a := e.s.(idemstore.Admin)
	for i := 0; i < 3; i++ {
		l := e.mustOwn(fmt.Sprintf("%s:list:%d", e.key, i), fp("a"), idemstore.ClaimAcquired)
		if i < 2 {
			if err := e.s.Complete(ctx, l, idemstore.Result{Data: []byte(`1`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.mustOwn(e.key+":other", fp("a"), idemstore.ClaimAcquired)
	states := map[idemstore.State]int{}
	err := a.List(ctx, e.key+":list:", func(r idemstore.Record) error { states[r.State]++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if states[idemstore.StateCompleted] != 2 || states[idemstore.StateInProgress] != 1 || len(states) != 2 {
		t.Fatalf("List found %v, want 2 completed and 1 in progress", states)
	}
	stop := errors.New("stop")
	n := 0
	if err := a.List(ctx, e.key, func(idemstore.Record) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("List did not stop at fn's error: %v after %d", err, n)
	}
	e.advance(e.ttl + e.pastLease() + e.lease)
	if _, err := a.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	// Whoever removed them (Cleanup, or the server's own expiry), no
	// expired record may be left to list.
	var left []string
	if err := a.List(ctx, e.key+":list:", func(r idemstore.Record) error { left = append(left, r.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("after Cleanup, expired records are still listed: %v", left)
	}
}

func testAdminForceRelease(t *testing.T, e *env) {
	a := e.s.(idemstore.Admin)
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	r, err := a.ForceRelease(ctx, e.key)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != idemstore.StateReleased || r.Fence <= l.Fence {
		t.Fatalf("ForceRelease = %v fence %d, want released with fence > %d", r.State, r.Fence, l.Fence)
	}
	if err := e.s.Complete(ctx, l, idemstore.Result{Data: []byte(`1`)}); !isLeaseLost(err) {
		t.Fatalf("the released owner's Complete = %v, want ErrLeaseLost", err)
	}
	l2 := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	e.newerFence(l2.Fence, r.Fence, "after force release")
	if _, err := a.ForceRelease(ctx, e.key+":absent"); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("ForceRelease of an absent key = %v, want ErrNotFound", err)
	}
}
