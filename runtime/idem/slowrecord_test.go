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
}

func (s *slowFinish) InProcess() bool { return false }

func (s *slowFinish) Complete(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	time.Sleep(s.delay)
	defer s.once.Do(func() { close(s.finished) })
	return s.Store.Complete(ctx, l, r)
}

func (s *slowFinish) Fail(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	time.Sleep(s.delay)
	defer s.once.Do(func() { close(s.finished) })
	return s.Store.Fail(ctx, l, r)
}

func (s *slowFinish) Heartbeat(ctx context.Context, l idemstore.Lease) error {
	if s.lateBeat {
		<-s.finished
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
			rec := &recorder{}
			spec := &idem.Spec{Name: "test.LateBeat", Lease: lease}
			if tc.lock {
				spec.OnFailure = idem.FailureLock
			}
			var runs atomic.Int32
			err := tc.run(context.Background(), idem.NewGuard(store, idem.WithObserver(rec)), spec, &runs)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("call = %v, want %v", err, tc.wantErr)
			}
			if got := rec.outcomes(); slices.Contains(got, idem.OutcomeLeaseLost.String()) {
				t.Fatalf("events %v: a beat after the outcome was written reported a lost lease", got)
			}
		})
	}
}
