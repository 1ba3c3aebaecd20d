package idemtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// env is one conformance test's store and sense of time.
type env struct {
	t       *testing.T
	s       idemstore.Store
	corrupt func(t *testing.T, s idemstore.Store, key string)
	legacy  func(t *testing.T, s idemstore.Store, key string)
	raw     func(t *testing.T, s idemstore.Store) [][]byte
	clock   *Clock // nil: real time
	lease   time.Duration
	ttl     time.Duration
	key     string
	n       atomic.Uint64
}

func newEnv(t *testing.T, h Harness) *env {
	t.Helper()
	e := &env{t: t, key: "idemtest:" + strings.ReplaceAll(t.Name(), "/", ":"), corrupt: h.Corrupt, legacy: h.Legacy, raw: h.Raw}
	now := time.Now
	if h.ManualClock {
		e.clock = NewClock(time.Now().Truncate(time.Millisecond))
		now = e.clock.Now
		e.lease, e.ttl = 10*time.Second, time.Hour
	} else {
		e.lease = h.Lease
		if e.lease <= 0 {
			e.lease = 300 * time.Millisecond
		}
		e.ttl = 4 * e.lease
	}
	e.s = h.New(t, now)
	return e
}

// advance lets d pass for the store: instantly on a manual clock, by
// sleeping otherwise.
func (e *env) advance(d time.Duration) {
	if e.clock != nil {
		e.clock.Advance(d)
		return
	}
	time.Sleep(d)
}

// pastLease is a wait long enough for a lease to expire by any clock.
func (e *env) pastLease() time.Duration { return e.lease + e.lease/2 + 20*time.Millisecond }

func (e *env) token() idemstore.Token {
	var t idemstore.Token
	_, _ = rand.Read(t[:8])
	n := e.n.Add(1)
	for i := 0; i < 8; i++ {
		t[8+i] = byte(n >> (56 - 8*i))
	}
	return t
}

func fp(s string) idemstore.Fingerprint { return idemstore.Fingerprint(sha256.Sum256([]byte(s))) }

func (e *env) req(key string, owner idemstore.Token, f idemstore.Fingerprint) idemstore.ClaimRequest {
	return idemstore.ClaimRequest{Key: key, Fingerprint: f, Owner: owner, Lease: e.lease, TTL: e.ttl}
}

// claim claims key for a new owner and fails the test on a store error.
func (e *env) claim(key string, f idemstore.Fingerprint) (idemstore.Lease, idemstore.ClaimResult) {
	e.t.Helper()
	owner := e.token()
	res, err := e.s.Claim(context.Background(), e.req(key, owner, f))
	if err != nil {
		e.t.Fatalf("Claim(%s): %v", key, err)
	}
	return idemstore.Lease{Key: key, Owner: owner, Fence: res.Fence, Duration: e.lease, TTL: e.ttl}, res
}

// newerFence fails unless the fence got after an event is above the one before it.
func (e *env) newerFence(after, before uint64, event string) {
	e.t.Helper()
	if after <= before {
		e.t.Fatalf("fence %s = %d, want > %d", event, after, before)
	}
}

// mustOwn claims key and fails unless the claim made the caller its owner.
func (e *env) mustOwn(key string, f idemstore.Fingerprint, want idemstore.ClaimStatus) idemstore.Lease {
	e.t.Helper()
	l, res := e.claim(key, f)
	if res.Status != want {
		e.t.Fatalf("Claim(%s) = %v, want %v", key, res.Status, want)
	}
	if res.Fence == 0 {
		e.t.Fatalf("Claim(%s) gave fence 0; fences start at 1", key)
	}
	return l
}

// completed owns key (payload a) and completes it with the result 1.
func (e *env) completed(key string) idemstore.Lease {
	e.t.Helper()
	l := e.mustOwn(key, fp("a"), idemstore.ClaimAcquired)
	if err := e.s.Complete(ctx, l, idemstore.Result{Data: []byte(`1`)}); err != nil {
		e.t.Fatal(err)
	}
	return l
}

func (e *env) get(key string) idemstore.Record {
	e.t.Helper()
	r, err := e.s.Get(context.Background(), key)
	if err != nil {
		e.t.Fatalf("Get(%s): %v", key, err)
	}
	return r
}

func isLeaseLost(err error) bool { return errors.Is(err, idem.ErrLeaseLost) }

var ctx = context.Background()

func runSuite(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("idemtest: Harness.New is nil")
	}
	for _, c := range suiteCases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newEnv(t, h)) })
	}
	for _, c := range retentionCases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newEnv(t, h)) })
	}
	for _, c := range hostileCases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newEnv(t, h)) })
	}
	for _, c := range claimedAtCases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newEnv(t, h)) })
	}
	for _, c := range sealCases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newEnv(t, h)) })
	}
	// Optional capabilities, checked on a store of their own.
	probe := newEnv(t, h).s
	if o, ok := probe.(idemstore.Orderer); ok && o.SupportsOrdering() {
		for _, c := range orderCases {
			t.Run(c.name, func(t *testing.T) { c.run(t, newEnv(t, h)) })
		}
	} else {
		t.Logf("%T does not implement idemstore.Orderer: ordering cases not run", probe)
	}
	if _, ok := probe.(idemstore.Stepper); ok {
		for _, c := range stepCases {
			t.Run(c.name, func(t *testing.T) { c.run(t, newEnv(t, h)) })
		}
	} else {
		t.Logf("%T does not implement idemstore.Stepper: recovery point cases not run", probe)
	}
	if _, ok := probe.(idemstore.Streamer); ok {
		for _, c := range streamCases {
			t.Run(c.name, func(t *testing.T) { c.run(t, newEnv(t, h)) })
		}
	} else {
		t.Logf("%T does not implement idemstore.Streamer: stream cases not run", probe)
	}
	if _, ok := probe.(idemstore.Admin); ok {
		for _, c := range append(adminCases, adminClaimedAtCases...) {
			t.Run(c.name, func(t *testing.T) { c.run(t, newEnv(t, h)) })
		}
	} else {
		t.Logf("%T does not implement idemstore.Admin: admin cases not run", probe)
	}
}

type suiteCase struct {
	name string
	run  func(t *testing.T, e *env)
}

var suiteCases = []suiteCase{
	{"ClaimAbsentAcquires", testClaimAbsent},
	{"DuplicateSeesInProgress", testDuplicateInProgress},
	{"Mismatch", testMismatch},
	{"CompleteReplaysByteExact", testCompleteReplay},
	{"FailReplays", testFailReplay},
	{"ReleaseKeepsFence", testRelease},
	{"TakeoverAfterLeaseExpiry", testTakeover},
	{"StaleOwnerRejectedAfterTakeover", testStaleAfterTakeover},
	{"StaleOwnerRejectedAfterRelease", testStaleAfterRelease},
	{"FencesStrictlyIncrease", testFencesIncrease},
	{"HeartbeatExtendsLease", testHeartbeatExtends},
	{"LateHeartbeatRejected", testLateHeartbeat},
	{"OwnersBeatAfterItsOutcomeChangesNothing", testBeatAfterOutcome},
	{"ExpiredLeaseWithoutTakeoverStillCompletes", testExpiredLeaseCompletes},
	{"TTLExpiry", testTTLExpiry},
	{"ConcurrentClaimElectsOne", testConcurrentClaim},
	{"ConcurrentCompletionOneWins", testConcurrentCompletion},
	{"StaleAndNewOwnerRaceToComplete", testStaleNewRace},
	{"CanceledContextMutatesNothing", testCanceledContext},
	{"WaitWakes", testWaitWakes},
	{"WaitReturnsAtOnceWhenNotInProgress", testWaitImmediate},
	{"WaitWakesOnLeaseExpiry", testWaitLeaseExpiry},
	{"WaitHonoursContext", testWaitContext},
	{"DeleteAndGetAbsent", testDelete},
	{"IndependentKeys", testIndependentKeys},
	{"GuardsShareStoreExactlyOnce", testGuardsExactlyOnce},
}

func testClaimAbsent(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	r := e.get(e.key)
	got := struct {
		State idemstore.State
		Owner idemstore.Token
		Fence uint64
		FP    idemstore.Fingerprint
	}{r.State, r.Owner, r.Fence, r.Fingerprint}
	want := got
	want.State, want.Owner, want.Fence, want.FP = idemstore.StateInProgress, l.Owner, l.Fence, fp("a")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("record after claim (-want +got):\n%s", diff)
	}
	if r.LeaseUntil.IsZero() {
		t.Fatal("in-progress record has no lease expiry")
	}
}

func testDuplicateInProgress(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	_, res := e.claim(e.key, fp("a"))
	if res.Status != idemstore.ClaimInProgress || res.Fence != l.Fence {
		t.Fatalf("duplicate claim = %v fence %d, want in_progress fence %d", res.Status, res.Fence, l.Fence)
	}
	if res.LeaseUntil.IsZero() {
		t.Fatal("in_progress claim result carries no lease expiry")
	}
}

func testMismatch(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	if _, res := e.claim(e.key, fp("b")); res.Status != idemstore.ClaimMismatch {
		t.Fatalf("other payload while in progress = %v, want mismatch", res.Status)
	}
	if err := e.s.Complete(ctx, l, idemstore.Result{Data: []byte(`1`)}); err != nil {
		t.Fatal(err)
	}
	if _, res := e.claim(e.key, fp("b")); res.Status != idemstore.ClaimMismatch {
		t.Fatalf("other payload after completion = %v, want mismatch", res.Status)
	}
	if _, res := e.claim(e.key, fp("a")); res.Status != idemstore.ClaimCompleted {
		t.Fatalf("same payload after mismatch = %v, want completed (a mismatch changes nothing)", res.Status)
	}
}

func payloads() map[string][]byte {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	big := make([]byte, 100<<10)
	_, _ = rand.Read(big)
	return map[string][]byte{
		"json":          []byte(`{"id":"inv_1","amount":1250,"tags":["a","b"]}`),
		"every_byte":    all,
		"invalid_utf8":  {0xff, 0xfe, 0x00, 0xc3, 0x28},
		"nul_bytes":     {0, 0, 0},
		"unicode":       []byte("żółć ✓ 日本"),
		"100KiB_random": big,
		"one_byte":      {'1'},
	}
}

func testCompleteReplay(t *testing.T, e *env) {
	for name, data := range payloads() {
		t.Run(name, func(t *testing.T) {
			key := e.key + ":" + name
			l := e.mustOwn(key, fp(name), idemstore.ClaimAcquired)
			if err := e.s.Complete(ctx, l, idemstore.Result{Data: data}); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			_, res := e.claim(key, fp(name))
			if res.Status != idemstore.ClaimCompleted {
				t.Fatalf("claim after completion = %v, want completed", res.Status)
			}
			if !bytes.Equal(res.Result.Data, data) {
				t.Fatalf("replayed %d bytes, differ from the %d stored", len(res.Result.Data), len(data))
			}
			r := e.get(key)
			if r.State != idemstore.StateCompleted || !bytes.Equal(r.Result, data) || r.Fence != l.Fence {
				t.Fatalf("Get = state %v fence %d (%d bytes), want completed fence %d with the stored bytes", r.State, r.Fence, len(r.Result), l.Fence)
			}
		})
	}
}

func testFailReplay(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	data := []byte(`{"message":"card declined"}`)
	if err := e.s.Fail(ctx, l, idemstore.Result{Data: data}); err != nil {
		t.Fatal(err)
	}
	_, res := e.claim(e.key, fp("a"))
	if res.Status != idemstore.ClaimFailed || !bytes.Equal(res.Result.Data, data) {
		t.Fatalf("claim after failure = %v %q, want failed %q", res.Status, res.Result.Data, data)
	}
	if r := e.get(e.key); r.State != idemstore.StateFailed {
		t.Fatalf("Get state = %v, want failed", r.State)
	}
}

func testRelease(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	if err := e.s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	if r := e.get(e.key); r.State != idemstore.StateReleased || r.Fence != l.Fence {
		t.Fatalf("Get after release = %v fence %d, want released fence %d", r.State, r.Fence, l.Fence)
	}
	// A released key is free for its own payload (another payload is a
	// mismatch while the record is retained: see retention.go).
	l2 := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	e.newerFence(l2.Fence, l.Fence, "after release")
}

func testTakeover(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	e.advance(e.pastLease())
	l2 := e.mustOwn(e.key, fp("a"), idemstore.ClaimTakenOver)
	e.newerFence(l2.Fence, l.Fence, "after takeover")
	if r := e.get(e.key); r.Owner != l2.Owner || r.Fence != l2.Fence || r.State != idemstore.StateInProgress {
		t.Fatalf("record after takeover: owner %v fence %d %v; want the new owner", r.Owner, r.Fence, r.State)
	}
}

// staleOps tries every fenced write with l and wants each rejected.
func staleOps(t *testing.T, e *env, l idemstore.Lease, key string) {
	t.Helper()
	before := e.get(key)
	ops := []struct {
		name string
		op   func() error
	}{
		{"Heartbeat", func() error { return e.s.Heartbeat(ctx, l) }},
		{"Complete", func() error { return e.s.Complete(ctx, l, idemstore.Result{Data: []byte(`"stale"`)}) }},
		{"Fail", func() error { return e.s.Fail(ctx, l, idemstore.Result{Data: []byte(`"stale"`)}) }},
		{"Release", func() error { return e.s.Release(ctx, l) }},
	}
	for _, o := range ops {
		if err := o.op(); !isLeaseLost(err) {
			t.Errorf("stale %s = %v, want ErrLeaseLost", o.name, err)
		}
	}
	after := e.get(key)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("stale writes changed the record (-before +after):\n%s", diff)
	}
}

func testStaleAfterTakeover(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	e.advance(e.pastLease())
	e.mustOwn(e.key, fp("a"), idemstore.ClaimTakenOver)
	staleOps(t, e, l, e.key)
}

func testStaleAfterRelease(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	if err := e.s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	// The same owner token claims again: only the fence tells the two
	// ownerships apart, so the store must check it.
	res, err := e.s.Claim(ctx, e.req(e.key, l.Owner, fp("a")))
	if err != nil || res.Status != idemstore.ClaimAcquired || res.Fence <= l.Fence {
		t.Fatalf("re-claim by the same owner = %v fence %d, %v; want acquired with fence > %d", res.Status, res.Fence, err, l.Fence)
	}
	staleOps(t, e, l, e.key)
	forged := l
	forged.Fence = res.Fence + 100
	if err := e.s.Complete(ctx, forged, idemstore.Result{Data: []byte(`1`)}); !isLeaseLost(err) {
		t.Errorf("Complete with a forged fence = %v, want ErrLeaseLost", err)
	}
}

func testFencesIncrease(t *testing.T, e *env) {
	var fences []uint64
	for i := 0; i < 3; i++ {
		l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
		fences = append(fences, l.Fence)
		if err := e.s.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	for i := 0; i < 2; i++ {
		e.advance(e.pastLease())
		l := e.mustOwn(e.key, fp("a"), idemstore.ClaimTakenOver)
		fences = append(fences, l.Fence)
	}
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fences %v do not strictly increase", fences)
		}
	}
}

func testHeartbeatExtends(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	first := e.get(e.key).LeaseUntil
	step := e.lease * 2 / 3
	for i := 0; i < 3; i++ {
		e.advance(step)
		if err := e.s.Heartbeat(ctx, l); err != nil {
			t.Fatalf("heartbeat %d: %v", i, err)
		}
	}
	// 2 leases have passed since the claim: only the heartbeats keep it.
	if _, res := e.claim(e.key, fp("a")); res.Status != idemstore.ClaimInProgress {
		t.Fatalf("claim after heartbeats = %v, want in_progress (heartbeats must extend the lease)", res.Status)
	}
	if r := e.get(e.key); !r.LeaseUntil.After(first) {
		t.Fatalf("lease expiry %v did not move past %v", r.LeaseUntil, first)
	}
}

func testLateHeartbeat(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	e.advance(e.pastLease())
	e.mustOwn(e.key, fp("a"), idemstore.ClaimTakenOver)
	if err := e.s.Heartbeat(ctx, l); !isLeaseLost(err) {
		t.Fatalf("late heartbeat = %v, want ErrLeaseLost", err)
	}
}

func testExpiredLeaseCompletes(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	e.advance(e.pastLease())
	// Nobody took over: the owner is still the only one, so its
	// completion is safe and kept.
	if err := e.s.Complete(ctx, l, idemstore.Result{Data: []byte(`7`)}); err != nil {
		t.Fatalf("Complete after lease expiry without takeover = %v, want nil", err)
	}
	if _, res := e.claim(e.key, fp("a")); res.Status != idemstore.ClaimCompleted {
		t.Fatalf("claim = %v, want completed", res.Status)
	}
}

func testTTLExpiry(t *testing.T, e *env) {
	e.completed(e.key)
	e.advance(e.ttl / 2)
	if _, res := e.claim(e.key, fp("a")); res.Status != idemstore.ClaimCompleted {
		t.Fatalf("claim within TTL = %v, want completed", res.Status)
	}
	e.advance(e.ttl/2 + e.ttl/4 + 50*time.Millisecond)
	if _, err := e.s.Get(ctx, e.key); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("Get after TTL = %v, want ErrNotFound", err)
	}
	// Past its TTL the key runs again, even with another payload.
	l2 := e.mustOwn(e.key, fp("b"), idemstore.ClaimAcquired)
	if err := e.s.Complete(ctx, l2, idemstore.Result{Data: []byte(`2`)}); err != nil {
		t.Fatal(err)
	}
	if r := e.get(e.key); string(r.Result) != "2" {
		t.Fatalf("result after re-run = %q, want 2", r.Result)
	}
}

func testConcurrentClaim(t *testing.T, e *env) {
	const n = 200
	var owners, inProgress atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			// A long lease: this case is about exclusivity, and on a
			// loaded machine 200 claims may outlast a short one, which
			// would make a legitimate takeover look like two owners.
			req := e.req(e.key, e.token(), fp("a"))
			req.Lease = time.Hour
			res, err := e.s.Claim(ctx, req)
			switch {
			case err != nil:
				t.Errorf("Claim: %v", err)
			case (res.Status == idemstore.ClaimAcquired || res.Status == idemstore.ClaimTakenOver):
				owners.Add(1)
			case res.Status == idemstore.ClaimInProgress:
				inProgress.Add(1)
			default:
				t.Errorf("Claim = %v", res.Status)
			}
		}()
	}
	close(start)
	wg.Wait()
	if owners.Load() != 1 || inProgress.Load() != n-1 {
		t.Fatalf("%d concurrent claims: %d owners, %d in progress; want 1 and %d", n, owners.Load(), inProgress.Load(), n-1)
	}
}

func testConcurrentCompletion(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	const n = 32
	var wins atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			err := e.s.Complete(ctx, l, idemstore.Result{Data: []byte(fmt.Sprint(i))})
			switch {
			case err == nil:
				wins.Add(1)
			case !isLeaseLost(err):
				t.Errorf("Complete: %v", err)
			}
		}(i)
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d concurrent completions of one lease: %d succeeded, want 1", n, wins.Load())
	}
}

func testStaleNewRace(t *testing.T, e *env) {
	for i := 0; i < 5; i++ {
		key := fmt.Sprintf("%s:%d", e.key, i)
		old := e.mustOwn(key, fp("a"), idemstore.ClaimAcquired)
		e.advance(e.pastLease())
		cur := e.mustOwn(key, fp("a"), idemstore.ClaimTakenOver)
		var wg sync.WaitGroup
		var oldErr, curErr error
		wg.Add(2)
		go func() { defer wg.Done(); oldErr = e.s.Complete(ctx, old, idemstore.Result{Data: []byte(`"old"`)}) }()
		go func() { defer wg.Done(); curErr = e.s.Complete(ctx, cur, idemstore.Result{Data: []byte(`"new"`)}) }()
		wg.Wait()
		if !isLeaseLost(oldErr) || curErr != nil {
			t.Fatalf("stale owner: %v (want ErrLeaseLost); new owner: %v (want nil)", oldErr, curErr)
		}
		if r := e.get(key); string(r.Result) != `"new"` {
			t.Fatalf("stored %s, want the new owner's result", r.Result)
		}
	}
}

func testCanceledContext(t *testing.T, e *env) {
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	absent := e.key + ":absent"
	if _, err := e.s.Claim(canceled, e.req(absent, e.token(), fp("a"))); !errors.Is(err, context.Canceled) {
		t.Errorf("Claim with canceled ctx = %v, want context.Canceled", err)
	}
	if _, err := e.s.Get(ctx, absent); !errors.Is(err, idem.ErrNotFound) {
		t.Errorf("a canceled Claim created a record: Get = %v", err)
	}
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	before := e.get(e.key)
	ops := map[string]func() error{
		"Heartbeat": func() error { return e.s.Heartbeat(canceled, l) },
		"Complete":  func() error { return e.s.Complete(canceled, l, idemstore.Result{Data: []byte(`1`)}) },
		"Fail":      func() error { return e.s.Fail(canceled, l, idemstore.Result{Data: []byte(`1`)}) },
		"Release":   func() error { return e.s.Release(canceled, l) },
		"Delete":    func() error { return e.s.Delete(canceled, e.key) },
		"Claim": func() error {
			_, err := e.s.Claim(canceled, e.req(e.key, e.token(), fp("a")))
			return err
		},
		"Get": func() error {
			_, err := e.s.Get(canceled, e.key)
			return err
		},
		"Wait": func() error { return e.s.Wait(canceled, e.key) },
	}
	for name, op := range ops {
		if err := op(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with canceled ctx = %v, want context.Canceled", name, err)
		}
	}
	if diff := cmp.Diff(before, e.get(e.key)); diff != "" {
		t.Errorf("canceled operations changed the record (-before +after):\n%s", diff)
	}
}

// waitFor starts Wait on key and returns a channel that gets its result.
func (e *env) waitFor(key string) <-chan error {
	return await(func(wctx context.Context) error { return e.s.Wait(wctx, key) })
}

func testWaitWakes(t *testing.T, e *env) {
	transitions := []struct {
		name string
		do   func(l idemstore.Lease) error
		want idemstore.State
	}{
		{"completion", func(l idemstore.Lease) error { return e.s.Complete(ctx, l, idemstore.Result{Data: []byte(`1`)}) }, idemstore.StateCompleted},
		{"failure", func(l idemstore.Lease) error { return e.s.Fail(ctx, l, idemstore.Result{Data: []byte(`1`)}) }, idemstore.StateFailed},
		{"release", func(l idemstore.Lease) error { return e.s.Release(ctx, l) }, idemstore.StateReleased},
		{"delete", func(l idemstore.Lease) error { return e.s.Delete(ctx, l.Key) }, idemstore.StateAbsent},
	}
	for _, tr := range transitions {
		t.Run(tr.name, func(t *testing.T) {
			key := e.key + ":" + tr.name
			l := e.mustOwn(key, fp("a"), idemstore.ClaimAcquired)
			if err := wokenBy(t, "Wait", tr.name, e.waitFor(key), func() error { return tr.do(l) }); err != nil {
				t.Fatalf("Wait = %v after %s, want nil", err, tr.name)
			}
			if tr.want != idemstore.StateAbsent {
				if r := e.get(key); r.State != tr.want {
					t.Fatalf("state after Wait = %v, want %v", r.State, tr.want)
				}
			}
		})
	}
}

func testWaitImmediate(t *testing.T, e *env) {
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := e.s.Wait(wctx, e.key+":absent"); err != nil {
		t.Fatalf("Wait on an absent key = %v", err)
	}
	e.completed(e.key)
	if err := e.s.Wait(wctx, e.key); err != nil {
		t.Fatalf("Wait on a completed key = %v", err)
	}
}

func testWaitLeaseExpiry(t *testing.T, e *env) {
	e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	done := e.waitFor(e.key)
	e.advance(e.pastLease())
	if err := within(t, done, 5*time.Second, "Wait after the lease expired"); err != nil {
		t.Fatalf("Wait = %v after the lease expired, want nil", err)
	}
}

func testWaitContext(t *testing.T, e *env) {
	e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	wctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := e.s.Wait(wctx, e.key)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a live lease = %v, want context.DeadlineExceeded", err)
	}
	if waited := time.Since(start); waited > 3*time.Second {
		t.Fatalf("Wait took %v to notice its ctx ended", waited)
	}
}

func testDelete(t *testing.T, e *env) {
	if _, err := e.s.Get(ctx, e.key); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("Get of an absent key = %v, want ErrNotFound", err)
	}
	if err := e.s.Delete(ctx, e.key); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("Delete of an absent key = %v, want ErrNotFound", err)
	}
	e.completed(e.key)
	if err := e.s.Delete(ctx, e.key); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	if _, err := e.s.Get(ctx, e.key); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("Get after Delete = %v, want ErrNotFound", err)
	}
	e.mustOwn(e.key, fp("b"), idemstore.ClaimAcquired)
}

func testIndependentKeys(t *testing.T, e *env) {
	const n = 50
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			key := fmt.Sprintf("%s:%d", e.key, i)
			owner := e.token()
			res, err := e.s.Claim(ctx, e.req(key, owner, fp(key)))
			if err != nil || res.Status != idemstore.ClaimAcquired {
				t.Errorf("Claim(%s) = %v, %v; want acquired", key, res.Status, err)
				return
			}
			l := idemstore.Lease{Key: key, Owner: owner, Fence: res.Fence, Duration: e.lease, TTL: e.ttl}
			if err := e.s.Complete(ctx, l, idemstore.Result{Data: []byte(key)}); err != nil {
				t.Errorf("Complete(%s): %v", key, err)
			}
		}(i)
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("%s:%d", e.key, i)
		if r := e.get(key); string(r.Result) != key {
			t.Errorf("%s holds %q", key, r.Result)
		}
	}
}

// testGuardsExactlyOnce drives the store through two Guards, as two
// processes would: in-process deduplication cannot help across them, so
// exclusivity and wake-ups are the store's.
func testGuardsExactlyOnce(t *testing.T, e *env) {
	guards := []*idem.Guard{idem.NewGuard(e.s), idem.NewGuard(e.s)}
	spec := &idem.Spec{Name: "idemtest.Guarded", Lease: 10 * time.Second, TTL: time.Hour, OnDuplicate: idem.DuplicateWait, Wait: 10 * time.Second}
	const keys, callers = 4, 16
	var runs [keys]atomic.Int64
	var wg sync.WaitGroup
	results := make([][]string, keys)
	var mu sync.Mutex
	for k := 0; k < keys; k++ {
		for c := 0; c < callers; c++ {
			wg.Add(1)
			go func(k, c int) {
				defer wg.Done()
				g := guards[c%len(guards)]
				call, m := idemimpl.Begin(g, spec)
				m.Key().String(e.key)
				m.Key().Int(int64(k))
				v, err := idem.Do(ctx, call, func(ctx context.Context) (string, error) {
					n := runs[k].Add(1)
					time.Sleep(20 * time.Millisecond)
					return fmt.Sprintf("key %d run %d", k, n), nil
				})
				if err != nil {
					t.Errorf("Do: %v", err)
					return
				}
				mu.Lock()
				results[k] = append(results[k], v)
				mu.Unlock()
			}(k, c)
		}
	}
	wg.Wait()
	for k := 0; k < keys; k++ {
		if n := runs[k].Load(); n != 1 {
			t.Errorf("key %d ran %d times, want 1", k, n)
		}
		for _, v := range results[k] {
			if want := fmt.Sprintf("key %d run 1", k); v != want {
				t.Errorf("key %d caller got %q, want %q", k, v, want)
			}
		}
	}
}
