package idemobs_test

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
	"github.com/idemgen/idemgen/runtime/idemobs"
	"github.com/idemgen/idemgen/runtime/idemobs/obstest"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// TestStaleScanner: the shared stale-claim script (obstest.Stale), then
// the prefix filter on the same store.
func TestStaleScanner(t *testing.T) {
	fx := obstest.NewStale(t)
	ctx := context.Background()
	check := func(name string, s *idemobs.StaleScanner, want idemobs.Stale) {
		t.Helper()
		got, err := s.Scan(ctx)
		if err != nil {
			t.Fatalf("%s: Scan: %v", name, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: Scan (-want +got):\n%s", name, diff)
		}
	}
	opts := []idemobs.StaleOption{idemobs.WithStaleClock(fx.Clock.Now), idemobs.WithStaleGrace(fx.Grace),
		idemobs.WithStaleScanInterval(fx.Interval)}
	all := newScanner(t, fx.Store, opts...)
	fx.Run(t, func(step string, want idemobs.Stale) { check(step, all, want) })
	// crashed-bb's lease expired 60s ago; crashed-a is filtered out.
	check("prefix", newScanner(t, fx.Store, append(opts, idemobs.WithStalePrefix("crashed-b"))...),
		idemobs.Stale{Count: 1, Oldest: time.Minute})
}

// TestStaleScannerGrace: a lease expired exactly the grace ago is not yet
// stale; a nanosecond later it is.
func TestStaleScannerGrace(t *testing.T) {
	clock := idemtest.NewClock(time.Unix(1_700_000_000, 0))
	store := memstore.New(memstore.WithClock(clock.Now))
	if _, err := store.Claim(context.Background(), idemstore.ClaimRequest{Key: "k", Owner: idemstore.Token{1}, Lease: time.Second, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		after time.Duration
		want  idemobs.Stale
	}{
		{time.Second + 3*time.Second, idemobs.Stale{}},
		{time.Second + 3*time.Second + time.Nanosecond, idemobs.Stale{Count: 1, Oldest: 3*time.Second + time.Nanosecond}},
	}
	for _, tt := range tests {
		t.Run(tt.after.String(), func(t *testing.T) {
			at := func() time.Time { return clock.Now().Add(tt.after) }
			got, err := newScanner(t, store, idemobs.WithStaleClock(at), idemobs.WithStaleGrace(3*time.Second)).Scan(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Scan (-want +got):\n%s", diff)
			}
		})
	}
}

// newScanner is idemobs.NewStaleScanner that fails the test on an error.
func newScanner(t *testing.T, admin idemstore.Admin, opts ...idemobs.StaleOption) *idemobs.StaleScanner {
	t.Helper()
	s, err := idemobs.NewStaleScanner(admin, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestNewStaleScannerRefuses: settings a scanner cannot work with are
// refused when it is built, not found at the first scrape.
func TestNewStaleScannerRefuses(t *testing.T) {
	store := memstore.New()
	tests := []struct {
		name  string
		admin idemstore.Admin
		opts  []idemobs.StaleOption
		want  string
	}{
		{"nil admin", nil, nil, "idemobs: NewStaleScanner: nil idemstore.Admin"},
		{"nil clock", store, []idemobs.StaleOption{idemobs.WithStaleClock(nil)}, "idemobs: WithStaleClock(nil)"},
		{"negative grace", store, []idemobs.StaleOption{idemobs.WithStaleGrace(-time.Second)}, "idemobs: WithStaleGrace(-1s): negative"},
		{"zero interval", store, []idemobs.StaleOption{idemobs.WithStaleScanInterval(0)}, "idemobs: WithStaleScanInterval(0s): not positive"},
		{"zero timeout", store, []idemobs.StaleOption{idemobs.WithStaleScanTimeout(0)}, "idemobs: WithStaleScanTimeout(0s): not positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := idemobs.NewStaleScanner(tt.admin, tt.opts...)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" || s != nil {
				t.Errorf("NewStaleScanner error (-want +got):\n%s(scanner %v)", diff, s)
			}
		})
	}
}

// scriptedAdmin lists the records it is given, then returns err; it
// counts its listings.
type scriptedAdmin struct {
	idemstore.Admin
	records []idemstore.Record
	err     error
	lists   atomic.Int32
	block   bool // wait for ctx's end instead
}

func (a *scriptedAdmin) List(ctx context.Context, _ string, fn func(idemstore.Record) error) error {
	a.lists.Add(1)
	if a.block {
		<-ctx.Done()
		return ctx.Err()
	}
	for _, r := range a.records {
		if err := fn(r); err != nil {
			return err
		}
	}
	return a.err
}

// TestStaleScannerErrors: a failed scan returns its error rather than
// zero stale claims and is retried at the next Scan, not cached for the
// interval; corrupt records (idem.ErrCorruptRecord after the listing) do
// not fail it; a scan that hangs is bounded by the timeout.
func TestStaleScannerErrors(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	stale := idemstore.Record{Key: "k", State: idemstore.StateInProgress, LeaseUntil: now.Add(-time.Minute)}
	clock := idemobs.WithStaleClock(func() time.Time { return now })
	down := errors.New("store down")

	failing := &scriptedAdmin{err: down}
	s := newScanner(t, failing, clock)
	for i := range 2 {
		if _, err := s.Scan(context.Background()); !errors.Is(err, down) {
			t.Fatalf("Scan %d = %v; want %v", i, err, down)
		}
	}
	if n := failing.lists.Load(); n != 2 {
		t.Errorf("lists after two failed scans = %d; want 2 (a failure is not cached)", n)
	}

	corrupt := &scriptedAdmin{records: []idemstore.Record{stale}, err: fmt.Errorf("key x: %w", idem.ErrCorruptRecord)}
	got, err := newScanner(t, corrupt, clock).Scan(context.Background())
	if err != nil {
		t.Fatalf("Scan with a corrupt record: %v", err)
	}
	if diff := cmp.Diff(idemobs.Stale{Count: 1, Oldest: time.Minute}, got); diff != "" {
		t.Errorf("Scan with a corrupt record (-want +got):\n%s", diff)
	}

	hung := &scriptedAdmin{block: true}
	start := time.Now()
	_, err = newScanner(t, hung, clock, idemobs.WithStaleScanTimeout(20*time.Millisecond)).Scan(context.Background())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hung Scan = %v; want %v", err, context.DeadlineExceeded)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("hung Scan took %v; want about the 20ms timeout", d)
	}
}

// TestStaleScannerConcurrent: concurrent Scans within the interval share
// one listing (run under -race).
func TestStaleScannerConcurrent(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	a := &scriptedAdmin{records: []idemstore.Record{{Key: "k", State: idemstore.StateInProgress, LeaseUntil: now.Add(-time.Minute)}}}
	s := newScanner(t, a, idemobs.WithStaleClock(func() time.Time { return now }))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			got, err := s.Scan(context.Background())
			if err != nil || got.Count != 1 {
				t.Errorf("Scan = %+v, %v; want 1 stale claim", got, err)
			}
		})
	}
	wg.Wait()
	if n := a.lists.Load(); n != 1 {
		t.Errorf("lists = %d; want 1", n)
	}
}
