// Package obstest drives a real idem.Guard through every outcome an
// Observer can see, so observer adapters (the ones in this repository and
// third-party ones) can assert exactly what they export after a known
// sequence of calls.
//
//	events := obstest.Run(t, myObserver)
//	// myObserver has now seen obstest.Script, in order.
//
// The calls go through idem.Do on an memstore.Store with a manual clock,
// wrapped by a store that can fail claims and heartbeats on demand. Lease
// loss and takeover are produced the way they happen in production: the
// running owner's lease expires and another owner claims the key.
package obstest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// Function names used by the script: one per Spec, so adapters are seen to
// separate series by function.
const (
	Charge = "shop.Charge" // on_duplicate=return, lease 1h
	Refund = "shop.Refund" // fails (on_failure=unlock)
	Notify = "shop.Notify" // on_duplicate=raise
	Sync   = "shop.Sync"   // short lease, so a heartbeat fires
	Track  = "shop.Track"  // ordered per entity
)

// Step is one event the script produces.
type Step struct {
	Func    string
	Outcome idem.Outcome
	Fence   uint64
	// Err says whether the event carries an error.
	Err bool
}

// Script is the exact event sequence Run produces.
var Script = []Step{
	{Charge, idem.OutcomeExecuted, 1, false},     // first call of k1
	{Charge, idem.OutcomeReplayed, 1, false},     // duplicate of k1
	{Charge, idem.OutcomeMismatch, 1, false},     // k1 with another payload
	{Charge, idem.OutcomeInProgress, 0, false},   // duplicate of running k2, answered in process
	{Charge, idem.OutcomeExecuted, 1, false},     // k2 finishes
	{Refund, idem.OutcomeFailed, 1, true},        // the function returns an error
	{Notify, idem.OutcomeExecuted, 1, false},     // first call of k4
	{Notify, idem.OutcomeDuplicate, 1, false},    // on_duplicate=raise
	{Charge, idem.OutcomeLeaseLost, 1, true},     // k5: lease expired, another owner took over, Complete rejected
	{Charge, idem.OutcomeTakeover, 3, false},     // k5: that owner's lease expired too; this call takes over
	{Charge, idem.OutcomeExecuted, 3, false},     // ... and runs
	{Sync, idem.OutcomeHeartbeatFailed, 1, true}, // a heartbeat cannot reach the store
	{Sync, idem.OutcomeExecuted, 1, false},       // the next one can; the call completes
	{Charge, idem.OutcomeStoreError, 0, true},    // claim fails, fail closed
	{Charge, idem.OutcomeStoreError, 0, true},    // claim fails on a fail-open Guard ...
	{Charge, idem.OutcomeFailOpen, 0, true},      // ... which runs the function unguarded
	{Charge, idem.OutcomeInvalidKey, 0, true},    // empty caller-supplied ID
	{Track, idem.OutcomeExecuted, 1, false},      // ordered: the entity's first event
	{Track, idem.OutcomeOutOfOrder, 0, true},     // an older event of the same entity
	{Track, idem.OutcomeOverride, 1, false},      // an older one again, under AllowOutOfOrder ...
	{Track, idem.OutcomeExecuted, 1, false},      // ... which runs
}

// OverrideReason is the reason the script gives AllowOutOfOrder.
const OverrideReason = "backfill from the archive"

// ErrInjected is the error the faulty store returns.
var ErrInjected = errors.New("obstest: store unreachable (injected)")

// ErrDeclined is the error the failing function returns.
var ErrDeclined = errors.New("card declined")

// faultyStore fails claims while failClaim is set and the next failBeats
// heartbeats, and tells the script when a heartbeat failed.
type faultyStore struct {
	idemstore.Store
	mu        sync.Mutex
	failClaim bool
	failBeats int
	beatFail  chan struct{} // closed after the first injected heartbeat failure
	lastClaim idemstore.ClaimRequest
}

// SupportsOrdering passes the memory store's ordering support through the
// wrapper.
func (s *faultyStore) SupportsOrdering() bool {
	o, ok := s.Store.(idemstore.Orderer)
	return ok && o.SupportsOrdering()
}

func (s *faultyStore) Claim(ctx context.Context, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	s.mu.Lock()
	fail := s.failClaim
	s.lastClaim = req
	s.mu.Unlock()
	if fail {
		return idemstore.ClaimResult{}, fmt.Errorf("claim %s: %w", req.Key, ErrInjected)
	}
	return s.Store.Claim(ctx, req)
}

func (s *faultyStore) Heartbeat(ctx context.Context, l idemstore.Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failBeats > 0 {
		s.failBeats--
		if s.beatFail != nil {
			close(s.beatFail)
			s.beatFail = nil
		}
		return fmt.Errorf("heartbeat: %w", ErrInjected)
	}
	return s.Store.Heartbeat(ctx, l)
}

type receipt struct{ ID string }

// Run drives the script through a fresh Guard observed by obs and returns
// the events obs received, in order (obs sees exactly these). It fails t
// if the Guard did not produce Script, which would mean the runtime's
// reporting changed, not the adapter under test.
func Run(t testing.TB, obs idem.Observer) []idem.Event {
	t.Helper()
	clock := idemtest.NewClock(time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))
	mem := memstore.New(memstore.WithClock(clock.Now))
	r := &run{t: t, ctx: context.Background(), clock: clock, mem: mem, store: &faultyStore{Store: mem}, rec: &idemtest.Recorder{}}
	both := idem.ObserverFunc(func(e idem.Event) {
		r.rec.Observe(e)
		obs.Observe(e)
	})
	r.g = idem.NewGuard(r.store, idem.WithObserver(both))
	r.gOpen = idem.NewGuard(r.store, idem.WithObserver(both), idem.WithFailOpen())
	r.newSpecs()

	r.firstCalls()
	r.leaseLoss()
	r.heartbeatFailure()
	r.storeDown()
	r.ordered()

	events := r.rec.Events()
	got := make([]Step, len(events))
	for i, e := range events {
		got[i] = Step{Func: e.Func, Outcome: e.Outcome, Fence: e.Fence, Err: e.Err != nil}
	}
	if diff := cmp.Diff(Script, got); diff != "" {
		t.Fatalf("obstest: the Guard reported another sequence than Script (-want +got):\n%s", diff)
	}
	return events
}

// run is one run of the script: the Guards over the faulty store, the
// Specs of the script's functions, and what the Guards report.
type run struct {
	t        testing.TB
	ctx      context.Context
	clock    *idemtest.Clock
	mem      *memstore.Store
	store    *faultyStore
	rec      *idemtest.Recorder
	g, gOpen *idem.Guard

	charge, refund, notify, sync, track *idem.Spec
}

// newSpecs sets the run's Specs, one per function.
func (r *run) newSpecs() {
	r.charge = &idem.Spec{Name: Charge, Lease: time.Hour}
	r.refund = &idem.Spec{Name: Refund, Lease: time.Hour}
	r.notify = &idem.Spec{Name: Notify, Lease: time.Hour, OnDuplicate: idem.DuplicateRaise}
	// The first heartbeat comes after a third of the lease (real time), and
	// its failure would only turn into lease loss if it ran a whole lease
	// after the call started: 600ms of slack for a late timer on a loaded
	// machine under -race.
	r.sync = &idem.Spec{Name: Sync, Lease: 900 * time.Millisecond}
	r.track = &idem.Spec{Name: Track, Lease: time.Hour, Ordered: true}
}

func (r *run) call(g *idem.Guard, spec *idem.Spec, id, payload string, fn func(context.Context) (receipt, error)) (receipt, error) {
	c, k := idemimpl.Begin(g, spec)
	k.Key().ID(id)
	k.Payload().String(id)
	k.Payload().String(payload)
	return idem.Do(r.ctx, c, fn)
}

func ok(context.Context) (receipt, error) { return receipt{ID: "r"}, nil }

// want fails the run unless err is target (nil: no error).
func (r *run) want(step string, err error, target error) {
	r.t.Helper()
	if target == nil && err != nil {
		r.t.Fatalf("obstest: %s: unexpected error %v", step, err)
	}
	if target != nil && !errors.Is(err, target) {
		r.t.Fatalf("obstest: %s: got error %v, want %v", step, err, target)
	}
}

// firstCalls: an execution, a replay, a mismatch, a duplicate of a
// running call, a failure, and a duplicate under on_duplicate=raise.
func (r *run) firstCalls() {
	g := r.g
	_, err := r.call(g, r.charge, "k1", "p1", ok)
	r.want("execute k1", err, nil)
	_, err = r.call(g, r.charge, "k1", "p1", ok)
	r.want("replay k1", err, nil)
	_, err = r.call(g, r.charge, "k1", "p2", ok)
	r.want("mismatch k1", err, idem.ErrPayloadMismatch)

	// k2: a duplicate arrives while the first call runs.
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := r.call(g, r.charge, "k2", "p", func(context.Context) (receipt, error) {
			close(started)
			<-release
			return receipt{ID: "r2"}, nil
		})
		done <- err
	}()
	<-started
	_, err = r.call(g, r.charge, "k2", "p", ok)
	r.want("duplicate of running k2", err, idem.ErrInProgress)
	close(release)
	r.want("execute k2", <-done, nil)

	_, err = r.call(g, r.refund, "k3", "p", func(context.Context) (receipt, error) { return receipt{}, ErrDeclined })
	r.want("failing k3", err, ErrDeclined)

	_, err = r.call(g, r.notify, "k4", "p", ok)
	r.want("execute k4", err, nil)
	_, err = r.call(g, r.notify, "k4", "p", ok)
	r.want("raise k4", err, idem.ErrDuplicate)
}

// leaseLoss: k5's lease expires while the function runs and another owner
// (another process, here a direct claim) takes the key over, so the first
// owner's Complete is rejected; then that owner's lease expires too.
func (r *run) leaseLoss() {
	_, err := r.call(r.g, r.charge, "k5", "p", func(ctx context.Context) (receipt, error) {
		r.store.mu.Lock()
		req := r.store.lastClaim // this call's own claim: same key and fingerprint
		r.store.mu.Unlock()
		r.clock.Advance(2 * time.Hour)
		req.Owner = idemstore.Token{0xee}
		res, err := r.mem.Claim(ctx, req)
		if err != nil || res.Status != idemstore.ClaimTakenOver {
			r.t.Errorf("obstest: interloper's claim of k5: %v, %v", res.Status, err)
		}
		return receipt{ID: "r5"}, nil
	})
	r.want("lease lost k5", err, idem.ErrLeaseLost)
	// The interloper dies without finishing; its lease expires too.
	r.clock.Advance(2 * time.Hour)
	_, err = r.call(r.g, r.charge, "k5", "p", ok)
	r.want("take over k5", err, nil)
}

// heartbeatFailure: k6's first heartbeat fails, the function waits for
// that, and the call then completes normally.
func (r *run) heartbeatFailure() {
	beatFailed := make(chan struct{})
	r.store.mu.Lock()
	r.store.failBeats, r.store.beatFail = 1, beatFailed
	r.store.mu.Unlock()
	_, err := r.call(r.g, r.sync, "k6", "p", func(context.Context) (receipt, error) {
		<-beatFailed
		return receipt{ID: "r6"}, nil
	})
	r.want("heartbeat k6", err, nil)
}

// storeDown: claims fail on a fail-closed and a fail-open Guard; then an
// empty ID.
func (r *run) storeDown() {
	r.store.mu.Lock()
	r.store.failClaim = true
	r.store.mu.Unlock()
	_, err := r.call(r.g, r.charge, "k7", "p", ok)
	r.want("store down, fail closed", err, idem.ErrStoreUnavailable)
	_, err = r.call(r.gOpen, r.charge, "k7", "p", ok)
	r.want("store down, fail open", err, nil)
	r.store.mu.Lock()
	r.store.failClaim = false
	r.store.mu.Unlock()

	_, err = r.call(r.g, r.charge, "", "p", ok)
	r.want("empty ID", err, idem.ErrInvalidKey)
}

// ordered: events of one entity, newest first, then an older one, then an
// older one an operator lets through.
func (r *run) ordered() {
	event := func(ctx context.Context, id string, at time.Time) error {
		c, k := idemimpl.Begin(r.g, r.track)
		k.Key().ID(id)
		k.Entity().String("device-1")
		k.At(at)
		_, err := idem.Do(ctx, c, ok)
		return err
	}
	t0 := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	r.want("newest event", event(r.ctx, "ev-3", t0.Add(2*time.Minute)), nil)
	r.want("older event", event(r.ctx, "ev-2", t0.Add(time.Minute)), idem.ErrOutOfOrder)
	r.want("older event, overridden", event(idem.AllowOutOfOrder(r.ctx, OverrideReason), "ev-1", t0), nil)
}
