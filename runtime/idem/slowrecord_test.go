package idem_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// slowFinish is a memory store whose completions and recorded failures
// take longer than a lease to land, as on a loaded DynamoDB: the write of
// the outcome is sent while the lease is live and applied after it would
// have run out.
type slowFinish struct {
	*memstore.Store
	delay time.Duration
	// finished is closed once the first completion or failure landed.
	finished chan struct{}
	once     sync.Once
	// lateBeat makes a heartbeat wait for the outcome to land first, so
	// that the store tells it the key is no longer in progress.
	lateBeat bool
	// beatErr, if set, is every heartbeat's answer; hang makes a
	// completion wait for its ctx to end.
	beatErr error
	hang    bool
}

func (s *slowFinish) InProcess() bool { return false }

func (s *slowFinish) Complete(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	s.wait(ctx)
	defer s.once.Do(func() { close(s.finished) })
	return s.Store.Complete(ctx, l, r)
}

func (s *slowFinish) Fail(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	s.wait(ctx)
	defer s.once.Do(func() { close(s.finished) })
	return s.Store.Fail(ctx, l, r)
}

// wait is the write's delay, cut short by its ctx.
func (s *slowFinish) wait(ctx context.Context) {
	if s.hang {
		<-ctx.Done()
		return
	}
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
	}
}

func (s *slowFinish) Heartbeat(ctx context.Context, l idemstore.Lease) error {
	if s.lateBeat {
		<-s.finished
	}
	if s.beatErr != nil {
		return s.beatErr
	}
	return s.Store.Heartbeat(ctx, l)
}

var errDeclined = errors.New("card declined")

// slowOutcomes are the three writes that end an owned call: a result, a
// recorded failure and a stream's end. run makes one call of spec on g
// and counts runs of the function.
var slowOutcomes = []struct {
	name    string
	lock    bool
	wantErr error
	run     func(ctx context.Context, g *idem.Guard, spec *idem.Spec, runs *atomic.Int32) error
}{
	{"completion", false, nil, func(ctx context.Context, g *idem.Guard, spec *idem.Spec, runs *atomic.Int32) error {
		_, err := call(ctx, g, spec, "k", func(context.Context) (int, error) { runs.Add(1); return 1, nil })
		return err
	}},
	{"recorded failure", true, errDeclined, func(ctx context.Context, g *idem.Guard, spec *idem.Spec, runs *atomic.Int32) error {
		_, err := call(ctx, g, spec, "k", func(context.Context) (int, error) { runs.Add(1); return 0, errDeclined })
		return err
	}},
	{"stream end", false, nil, func(ctx context.Context, g *idem.Guard, spec *idem.Spec, runs *atomic.Int32) error {
		produce := func(_ context.Context, yield func(int) bool) error {
			runs.Add(1)
			yield(1)
			return nil
		}
		for _, err := range idem.Stream(ctx, g.Begin(spec, "k"), produce) {
			if err != nil {
				return err
			}
		}
		return nil
	}},
}

// The owner heartbeats until its outcome is written, not only while its
// function runs: a completion slower than the rest of the lease must not
// let another caller take the key over and run the function again.
func TestHeartbeatsCoverASlowOutcome(t *testing.T) {
	const lease = 150 * time.Millisecond
	for _, tc := range slowOutcomes {
		t.Run(tc.name, func(t *testing.T) {
			store := &slowFinish{Store: memstore.New(), delay: 4 * lease, finished: make(chan struct{})}
			spec := &idem.Spec{Name: "test.SlowOutcome", Lease: lease}
			if tc.lock {
				spec.OnFailure = idem.FailureLock
			}
			var runs atomic.Int32
			first := make(chan error, 1)
			go func() { first <- tc.run(context.Background(), idem.NewGuard(store), spec, &runs) }()
			other := idem.NewGuard(store)
			for {
				select {
				case err := <-first:
					if !errors.Is(err, tc.wantErr) {
						t.Fatalf("the owner's call = %v, want %v", err, tc.wantErr)
					}
					if n := runs.Load(); n != 1 {
						t.Fatalf("the function ran %d times, want once", n)
					}
					return
				case <-time.After(lease / 3):
				}
				err := tc.run(context.Background(), other, spec, &runs)
				if err != nil && !errors.Is(err, idem.ErrInProgress) && !errors.Is(err, tc.wantErr) {
					var rec *idem.RecordedError
					if !errors.As(err, &rec) {
						t.Fatalf("a duplicate while the outcome is written: %v", err)
					}
				}
			}
		})
	}
}

// A beat that reaches the store after the outcome was written finds the
// key finished, not owned: that is the owner's own completion, not a lost
// lease, and nothing reports one.
func TestLateBeatIsNotALostLease(t *testing.T) {
	const lease = 150 * time.Millisecond
	for _, tc := range slowOutcomes {
		t.Run(tc.name, func(t *testing.T) {
			store := &slowFinish{Store: memstore.New(), delay: lease / 2, finished: make(chan struct{}), lateBeat: true}
			rec := &idemtest.Recorder{}
			spec := &idem.Spec{Name: "test.LateBeat", Lease: lease}
			if tc.lock {
				spec.OnFailure = idem.FailureLock
			}
			var runs atomic.Int32
			err := tc.run(context.Background(), idem.NewGuard(store, idem.WithObserver(rec)), spec, &runs)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("call = %v, want %v", err, tc.wantErr)
			}
			if got := rec.Outcomes(); slices.Contains(got, idem.OutcomeLeaseLost.String()) {
				t.Fatalf("events %v: a beat after the outcome was written reported a lost lease", got)
			}
		})
	}
}

// The write of an outcome is bounded by the lease as the heartbeats keep
// it, not by a fixed time: a store that takes a completion more slowly
// than the lease while it takes the heartbeats gets the time it needs (up
// to a cap); one that takes neither is given up on as before.
func TestOutcomeWriteLastsAsLongAsTheLease(t *testing.T) {
	const lease = 150 * time.Millisecond
	defer idem.SetWriteTimeoutFloor(50 * time.Millisecond)()
	tests := []struct {
		name     string
		store    *slowFinish
		recorded bool
		min, max time.Duration // how long the call takes
	}{
		{"slower than the lease, heartbeats taken", &slowFinish{delay: 4 * lease}, true, 4 * lease, 6 * lease},
		{"slower than the lease, heartbeats refused", &slowFinish{delay: 4 * lease, beatErr: errDown}, false, lease, 3 * lease},
		{"a write that never ends: the cap", &slowFinish{hang: true}, false, 6 * lease, 8 * lease},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := tc.store
			store.Store, store.finished = memstore.New(), make(chan struct{})
			g := idem.NewGuard(store)
			spec := &idem.Spec{Name: "test.SlowWrite", Lease: lease}
			start := time.Now()
			_, err := call(context.Background(), g, spec, "k", func(context.Context) (int, error) { return 1, nil })
			took := time.Since(start)
			if recorded := err == nil; recorded != tc.recorded {
				t.Fatalf("call = %v; want recorded %v", err, tc.recorded)
			}
			if !tc.recorded && !errors.Is(err, idem.ErrStoreUnavailable) {
				t.Fatalf("call = %v, want ErrStoreUnavailable", err)
			}
			if took < tc.min || took > tc.max {
				t.Errorf("the call took %s, want %s to %s", took, tc.min, tc.max)
			}
			r, err := store.Store.Get(context.Background(), mustStoreKey(t, g, spec, "k"))
			if err != nil {
				t.Fatal(err)
			}
			if completed := r.State == idemstore.StateCompleted; completed != tc.recorded {
				t.Errorf("record %v after the call; recorded %v", r.State, tc.recorded)
			}
		})
	}
}

func mustStoreKey(t *testing.T, g *idem.Guard, spec *idem.Spec, key string) string {
	t.Helper()
	k, err := g.Begin(spec, key).StoreKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}
