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
	idem.Store
	mu        sync.Mutex
	failClaim bool
	failBeats int
	beatFail  chan struct{} // closed after the first injected heartbeat failure
	lastClaim idem.ClaimRequest
}

// SupportsOrdering passes the memory store's ordering support through the
// wrapper.
func (s *faultyStore) SupportsOrdering() bool {
	o, ok := s.Store.(idem.Orderer)
	return ok && o.SupportsOrdering()
}

func (s *faultyStore) Claim(ctx context.Context, req idem.ClaimRequest) (idem.ClaimResult, error) {
	s.mu.Lock()
	fail := s.failClaim
	s.lastClaim = req
	s.mu.Unlock()
	if fail {
		return idem.ClaimResult{}, fmt.Errorf("claim %s: %w", req.Key, ErrInjected)
	}
	return s.Store.Claim(ctx, req)
}

func (s *faultyStore) Heartbeat(ctx context.Context, l idem.Lease) error {
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

// recorder keeps every event, for Run's own check of the sequence.
type recorder struct {
	mu     sync.Mutex
	events []idem.Event
}

func (r *recorder) Observe(e idem.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

type receipt struct{ ID string }

// Run drives the script through a fresh Guard observed by obs and returns
// the events obs received, in order (obs sees exactly these). It fails t
// if the Guard did not produce Script, which would mean the runtime's
// reporting changed, not the adapter under test.
func Run(t testing.TB, obs idem.Observer) []idem.Event {
	t.Helper()
	ctx := context.Background()
	clock := idemtest.NewClock(time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))
	mem := memstore.New(memstore.WithClock(clock.Now))
	store := &faultyStore{Store: mem}
	rec := &recorder{}
	both := idem.ObserverFunc(func(e idem.Event) {
		rec.Observe(e)
		obs.Observe(e)
	})
	g := idem.NewGuard(store, idem.WithObserver(both))
	gOpen := idem.NewGuard(store, idem.WithObserver(both), idem.WithFailOpen())

	charge := &idem.Spec{Name: Charge, Lease: time.Hour}
	refund := &idem.Spec{Name: Refund, Lease: time.Hour}
	notify := &idem.Spec{Name: Notify, Lease: time.Hour, OnDuplicate: idem.DuplicateRaise}
	// The first heartbeat comes after a third of the lease (real time), and
	// its failure would only turn into lease loss if it ran a whole lease
	// after the call started: 600ms of slack for a late timer on a loaded
	// machine under -race.
	sync := &idem.Spec{Name: Sync, Lease: 900 * time.Millisecond}

	call := func(g *idem.Guard, spec *idem.Spec, id, payload string, fn func(context.Context) (receipt, error)) (receipt, error) {
		c, k := idemimpl.Begin(g, spec)
		k.Key().ID(id)
		k.Payload().String(id)
		k.Payload().String(payload)
		return idem.Do(ctx, c, fn)
	}
	ok := func(context.Context) (receipt, error) { return receipt{ID: "r"}, nil }
	want := func(step string, err error, target error) {
		t.Helper()
		if target == nil && err != nil {
			t.Fatalf("obstest: %s: unexpected error %v", step, err)
		}
		if target != nil && !errors.Is(err, target) {
			t.Fatalf("obstest: %s: got error %v, want %v", step, err, target)
		}
	}

	_, err := call(g, charge, "k1", "p1", ok)
	want("execute k1", err, nil)
	_, err = call(g, charge, "k1", "p1", ok)
	want("replay k1", err, nil)
	_, err = call(g, charge, "k1", "p2", ok)
	want("mismatch k1", err, idem.ErrPayloadMismatch)

	// k2: a duplicate arrives while the first call runs.
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := call(g, charge, "k2", "p", func(context.Context) (receipt, error) {
			close(started)
			<-release
			return receipt{ID: "r2"}, nil
		})
		done <- err
	}()
	<-started
	_, err = call(g, charge, "k2", "p", ok)
	want("duplicate of running k2", err, idem.ErrInProgress)
	close(release)
	want("execute k2", <-done, nil)

	_, err = call(g, refund, "k3", "p", func(context.Context) (receipt, error) { return receipt{}, ErrDeclined })
	want("failing k3", err, ErrDeclined)

	_, err = call(g, notify, "k4", "p", ok)
	want("execute k4", err, nil)
	_, err = call(g, notify, "k4", "p", ok)
	want("raise k4", err, idem.ErrDuplicate)

	// k5: while the function runs its lease expires and another owner
	// (another process, here a direct claim) takes the key over, so the
	// first owner's Complete is rejected.
	_, err = call(g, charge, "k5", "p", func(ctx context.Context) (receipt, error) {
		store.mu.Lock()
		req := store.lastClaim // this call's own claim: same key and fingerprint
		store.mu.Unlock()
		clock.Advance(2 * time.Hour)
		req.Owner = idem.Token{0xee}
		res, err := mem.Claim(ctx, req)
		if err != nil || res.Status != idem.ClaimTakenOver {
			t.Errorf("obstest: interloper's claim of k5: %v, %v", res.Status, err)
		}
		return receipt{ID: "r5"}, nil
	})
	want("lease lost k5", err, idem.ErrLeaseLost)
	// The interloper dies without finishing; its lease expires too.
	clock.Advance(2 * time.Hour)
	_, err = call(g, charge, "k5", "p", ok)
	want("take over k5", err, nil)

	// k6: the first heartbeat fails, the function waits for that, and the
	// call then completes normally.
	beatFailed := make(chan struct{})
	store.mu.Lock()
	store.failBeats, store.beatFail = 1, beatFailed
	store.mu.Unlock()
	_, err = call(g, sync, "k6", "p", func(context.Context) (receipt, error) {
		<-beatFailed
		return receipt{ID: "r6"}, nil
	})
	want("heartbeat k6", err, nil)

	store.mu.Lock()
	store.failClaim = true
	store.mu.Unlock()
	_, err = call(g, charge, "k7", "p", ok)
	want("store down, fail closed", err, idem.ErrStoreUnavailable)
	_, err = call(gOpen, charge, "k7", "p", ok)
	want("store down, fail open", err, nil)
	store.mu.Lock()
	store.failClaim = false
	store.mu.Unlock()

	_, err = call(g, charge, "", "p", ok)
	want("empty ID", err, idem.ErrInvalidKey)

	// Ordered events of one entity: newest first, then an older one,
	// then an older one an operator lets through.
	track := &idem.Spec{Name: Track, Lease: time.Hour, Ordered: true}
	event := func(ctx context.Context, id string, at time.Time) error {
		c, k := idemimpl.Begin(g, track)
		k.Key().ID(id)
		k.Entity().String("device-1")
		k.At(at)
		_, err := idem.Do(ctx, c, ok)
		return err
	}
	t0 := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	want("newest event", event(ctx, "ev-3", t0.Add(2*time.Minute)), nil)
	want("older event", event(ctx, "ev-2", t0.Add(time.Minute)), idem.ErrOutOfOrder)
	want("older event, overridden", event(idem.AllowOutOfOrder(ctx, OverrideReason), "ev-1", t0), nil)

	rec.mu.Lock()
	events := append([]idem.Event(nil), rec.events...)
	rec.mu.Unlock()
	got := make([]Step, len(events))
	for i, e := range events {
		got[i] = Step{Func: e.Func, Outcome: e.Outcome, Fence: e.Fence, Err: e.Err != nil}
	}
	if diff := cmp.Diff(Script, got); diff != "" {
		t.Fatalf("obstest: the Guard reported another sequence than Script (-want +got):\n%s", diff)
	}
	return events
}
