package idem_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemseal"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// injected is the value a site panics with.
type injected struct{ site string }

// injector panics once at its site, the next time the Guard reaches it.
type injector struct {
	site  string
	armed atomic.Bool
}

func (in *injector) at(site string) {
	if in.site == site && in.armed.CompareAndSwap(true, false) {
		panic(injected{site})
	}
}

// panicStore is a store whose calls can panic, counting heartbeats.
type panicStore struct {
	idemstore.Store
	in          *injector
	beats       atomic.Int32
	refuseBeats bool
}

func (s *panicStore) InProcess() bool {
	ip, ok := s.Store.(interface{ InProcess() bool })
	return ok && ip.InProcess()
}

func (s *panicStore) Claim(ctx context.Context, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	res, err := s.Store.Claim(ctx, req)
	s.in.at("store.Claim") // after the claim landed: its reply is lost
	res.Result.Value = nil // replays decode, as from a networked store
	return res, err
}

func (s *panicStore) Heartbeat(ctx context.Context, l idemstore.Lease) error {
	s.beats.Add(1)
	s.in.at("store.Heartbeat")
	if s.refuseBeats {
		return errors.New("heartbeat refused")
	}
	return s.Store.Heartbeat(ctx, l)
}

func (s *panicStore) Complete(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	s.in.at("store.Complete")
	return s.Store.Complete(ctx, l, r)
}

func (s *panicStore) Fail(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	s.in.at("store.Fail")
	return s.Store.Fail(ctx, l, r)
}

func (s *panicStore) Release(ctx context.Context, l idemstore.Lease) error {
	s.in.at("store.Release")
	return s.Store.Release(ctx, l)
}

func (s *panicStore) Wait(ctx context.Context, key string) error {
	s.in.at("store.Wait")
	return s.Store.Wait(ctx, key)
}

func (s *panicStore) SaveStep(ctx context.Context, l idemstore.Lease, name string, data []byte) error {
	s.in.at("store.SaveStep")
	return s.Store.(idemstore.Stepper).SaveStep(ctx, l, name, data)
}

type panicCodec struct{ in *injector }

func (c panicCodec) Marshal(v any) ([]byte, error) {
	c.in.at("codec.Marshal")
	return json.Marshal(v)
}

func (c panicCodec) Unmarshal(data []byte, v any) error {
	c.in.at("codec.Unmarshal")
	return json.Unmarshal(data, v)
}

type panicSealer struct {
	in   *injector
	ring idem.Sealer
}

func (s panicSealer) Seal(p, ad []byte) ([]byte, error) {
	s.in.at("sealer.Seal")
	return s.ring.Seal(p, ad)
}

func (s panicSealer) Open(p, ad []byte) ([]byte, error) {
	s.in.at("sealer.Open")
	return s.ring.Open(p, ad)
}

// ownCtx is a ctx of the caller's own type: what the standard library
// derives from it (a wait's deadline) takes a goroutine, which goleak
// sees if it outlives the call.
type ownCtx struct {
	context.Context
	done chan struct{}
}

func (c ownCtx) Done() <-chan struct{} { return c.done }

type panicKeyer struct{ in *injector }

func (k panicKeyer) IdemKey() any {
	k.in.at("key")
	return "k"
}

// A panic anywhere in a guarded call's work, the Guard's own included (key,
// codec, store, observer, sealer), reaches the caller as the same value;
// the key is free afterwards (the next call runs the function, or gets the
// failure recorded for it, or the result recorded before the panic), the
// heartbeat has stopped, and no goroutine outlives the call.
func TestPanicAtEverySite(t *testing.T) {
	ring, err := idemseal.New(idemseal.Key{ID: "k1", Secret: bytes.Repeat([]byte{5}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	const lease = 60 * time.Millisecond
	tests := []struct {
		site      string
		fails     bool // fn returns an error
		lock      bool // on_failure=lock
		slow      bool // fn runs until its ctx ends (or 2s): heartbeats
		step      bool // fn runs a step
		replaying bool // the panic is armed for a duplicate of a completed call
		takeover  bool // the call takes over an expired lease
		waiting   bool // the call waits for another owner (on_duplicate=wait)
		want      string
	}{
		{site: "key", want: "ran"},
		{site: "store.Claim", want: "ran"},
		{site: "store.Heartbeat", slow: true, want: "ran"},
		{site: "store.Complete", want: "ran"},
		{site: "store.Fail", fails: true, lock: true, want: "ran"},
		{site: "store.Release", fails: true, want: "ran"},
		{site: "store.SaveStep", step: true, want: "ran"},
		{site: "codec.Marshal", want: "failed"},
		{site: "codec.Unmarshal", replaying: true, want: "replayed"},
		{site: "sealer.Seal", want: "failed"},
		{site: "sealer.Open", replaying: true, want: "replayed"},
		{site: "observer:executed", want: "replayed"},
		{site: "observer:failed", fails: true, want: "ran"},
		{site: "observer:failed", fails: true, lock: true, want: "failed"},
		{site: "observer:replayed", replaying: true, want: "replayed"},
		{site: "observer:step_ran", step: true, want: "ran"},
		{site: "observer:heartbeat_failed", slow: true, want: "ran"},
		{site: "observer:takeover", takeover: true, want: "ran"},
		{site: "store.Wait", waiting: true, want: "ran"},
	}
	stores := inModuleStores
	for _, sc := range stores {
		for i, tt := range tests {
			name := fmt.Sprintf("%s/%s/fails=%v,lock=%v", sc.name, tt.site, tt.fails, tt.lock)
			t.Run(name, func(t *testing.T) {
				in := &injector{site: tt.site}
				store := &panicStore{Store: sc.new(t), in: in}
				// Heartbeats fail, and are reported, for the observer's.
				store.refuseBeats = tt.site == "observer:heartbeat_failed"
				obs := idem.ObserverFunc(func(e idem.Event) { in.at("observer:" + e.Outcome.String()) })
				g := idem.NewGuard(store, idem.WithCodec(panicCodec{in}),
					idem.WithSealer(panicSealer{in, ring}), idem.WithObserver(obs))
				onFailure := idem.FailureUnlock
				if tt.lock {
					onFailure = idem.FailureLock
				}
				spec := &idem.Spec{Name: fmt.Sprintf("panics.F%d", i), Lease: lease, TTL: time.Hour, OnFailure: onFailure}
				if tt.waiting {
					spec.OnDuplicate, spec.Wait = idem.DuplicateWait, 10*time.Second
				}
				runs := 0
				call := func(first bool) (v string, p any, err error) {
					defer func() { p = recover() }()
					c, k := idemimpl.Begin(g, spec)
					k.Key().Key(panicKeyer{in})
					v, err = idem.Do(ownCtx{context.Background(), make(chan struct{})}, c, func(ctx context.Context) (string, error) {
						runs++
						if tt.step {
							if _, err := idem.Step(ctx, "s", func(context.Context) (int, error) { return 1, nil }); err != nil {
								return "", err
							}
						}
						if tt.slow && first {
							select {
							case <-ctx.Done():
							case <-time.After(2 * time.Second):
							}
						}
						if tt.fails || (tt.takeover || tt.waiting) && runs == 1 {
							return "", errors.New("declined")
						}
						return "v", nil
					})
					return v, nil, err
				}
				if tt.replaying {
					if _, p, err := call(false); err != nil || p != nil {
						t.Fatalf("the call to replay: %v, panic %v", err, p)
					}
				}
				if tt.takeover || tt.waiting {
					// Another owner holds the key: a claim made with the
					// fingerprint of a released call, then left to expire
					// (takeover) or released after a while (waiting).
					if _, p, err := call(false); err == nil || p != nil {
						t.Fatalf("the call to release: %v, panic %v", err, p)
					}
					hold(t, store, g, spec, in, tt.takeover)
				}
				runs = 0
				leaks := goleak.IgnoreCurrent()
				in.armed.Store(true)
				_, p, _ := call(true)
				if p != (injected{tt.site}) {
					t.Fatalf("the call panicked with %#v, want the injected %#v", p, injected{tt.site})
				}
				before := runs
				v, p, err := call(false)
				var rec *idem.RecordedError
				got := "in progress"
				switch {
				case p != nil:
					got = fmt.Sprint("panic: ", p)
				case runs > before:
					got = "ran"
				case errors.As(err, &rec):
					got = "failed"
				case err == nil && v == "v":
					got = "replayed"
				case err != nil && !errors.Is(err, idem.ErrInProgress):
					got = err.Error()
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("the call after the panic (-want +got):\n%s\nerr: %v", diff, err)
				}
				// The heartbeat stopped: none in three intervals after the calls.
				beats := store.beats.Load()
				time.Sleep(lease)
				if n := store.beats.Load() - beats; n != 0 {
					t.Errorf("%d heartbeats after the calls returned", n)
				}
				goleak.VerifyNone(t, leaks)
			})
		}
	}
}

// hold claims spec's key (in's) for another owner: with a lease that has
// run out when it returns (expired), else with one released in 100ms.
func hold(t *testing.T, store *panicStore, g *idem.Guard, spec *idem.Spec, in *injector, expired bool) {
	t.Helper()
	ctx := context.Background()
	c, k := idemimpl.Begin(g, spec)
	k.Key().Key(panicKeyer{in})
	key, err := c.StoreKey()
	if err != nil {
		t.Fatal(err)
	}
	rec, err := store.Store.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	owner := idemstore.Token{9}
	l := idemstore.Lease{Key: key, Owner: owner, Duration: 10 * time.Millisecond, TTL: time.Hour}
	if !expired {
		l.Duration = time.Minute
	}
	res, err := store.Store.Claim(ctx, idemstore.ClaimRequest{Key: key, Fingerprint: rec.Fingerprint, Owner: owner, Lease: l.Duration, TTL: l.TTL})
	if err != nil || res.Status != idemstore.ClaimAcquired {
		t.Fatalf("claim for another owner: %v, %v", res.Status, err)
	}
	l.Fence = res.Fence
	if expired {
		time.Sleep(3 * l.Duration)
		return
	}
	time.AfterFunc(100*time.Millisecond, func() { _ = store.Store.Release(ctx, l) })
}

// lostReplyStore applies a claim and then loses its reply (a timeout, as
// a network store's), and its Get panics once: the Guard's background
// search for the orphaned claim meets the panic off the caller's
// goroutine.
type lostReplyStore struct {
	idemstore.Store
	in   *injector
	lost atomic.Bool
}

func (s *lostReplyStore) Claim(ctx context.Context, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	res, err := s.Store.Claim(ctx, req)
	if err == nil && s.lost.CompareAndSwap(true, false) {
		return idemstore.ClaimResult{}, errors.New("read tcp: i/o timeout")
	}
	return res, err
}

func (s *lostReplyStore) Get(ctx context.Context, key string) (idemstore.Record, error) {
	s.in.at("store.Get")
	return s.Store.Get(ctx, key)
}

// A panic in the store while the Guard gives back a claim whose reply was
// lost, in the background, neither ends the process nor strands the key:
// the next call gives the claim back and runs.
func TestOrphanSearchPanic(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	in := &injector{site: "store.Get"}
	store := &lostReplyStore{Store: memstore.New(), in: in}
	g := idem.NewGuard(store)
	spec := &idem.Spec{Name: "panics.Orphan", Lease: time.Minute, TTL: time.Hour}
	runs := 0
	call := func() error {
		c := g.Begin(spec, "k")
		_, err := idem.Do(context.Background(), c, func(context.Context) (string, error) { runs++; return "v", nil })
		return err
	}
	in.armed.Store(true)
	store.lost.Store(true)
	if err := call(); !errors.Is(err, idem.ErrStoreUnavailable) {
		t.Fatalf("the call whose claim reply was lost: %v, want ErrStoreUnavailable", err)
	}
	// The background search has met the panic.
	for deadline := time.Now().Add(2 * time.Second); in.armed.Load() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if err := call(); err != nil || runs != 1 {
		t.Fatalf("the next call: %v after %d runs, want it to run", err, runs)
	}
	goleak.VerifyNone(t, leaks)
}
