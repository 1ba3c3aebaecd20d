package obstest

import (
	"context"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemobs"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// Stale is a store holding claims that go stale, for testing what a
// stale-claim exporter (idemobs.StaleScanner and the gauges built on it)
// reports over time. The exporter under test must scan Store with Clock's
// time, Grace and Interval (Scanner); Run then advances the clock and says
// what it should report at each step.
type Stale struct {
	Store    *memstore.Store
	Clock    *idemtest.Clock
	Grace    time.Duration // 2s
	Interval time.Duration // 1m

	running idemstore.Lease
}

// NewStale claims "crashed-a" (1s lease), "crashed-bb" (5s lease) and
// "running" (1s lease, heartbeated by Run), and claims and completes
// "done-dddd".
func NewStale(t testing.TB) *Stale {
	t.Helper()
	clock := idemtest.NewClock(time.Unix(1_700_000_000, 0))
	s := &Stale{Store: memstore.New(memstore.WithClock(clock.Now)), Clock: clock, Grace: 2 * time.Second, Interval: time.Minute}
	ctx := context.Background()
	claim := func(key string, lease time.Duration) idemstore.Lease {
		t.Helper()
		owner := idemstore.Token{byte(len(key))}
		res, err := s.Store.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: owner, Lease: lease, TTL: time.Hour})
		if err != nil || !(res.Status == idemstore.ClaimAcquired || res.Status == idemstore.ClaimTakenOver) {
			t.Fatalf("claim %s = %+v, %v", key, res, err)
		}
		return idemstore.Lease{Key: key, Owner: owner, Fence: res.Fence, Duration: lease, TTL: time.Hour}
	}
	claim("crashed-a", time.Second)
	claim("crashed-bb", 5*time.Second)
	s.running = claim("running", time.Second)
	if err := s.Store.Complete(ctx, claim("done-dddd", time.Second), idemstore.Result{Data: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	return s
}

// Scanner returns a scanner of Store with Clock's time, Grace and
// Interval, as Run expects.
func (s *Stale) Scanner(t testing.TB) *idemobs.StaleScanner {
	t.Helper()
	sc, err := idemobs.NewStaleScanner(s.Store, idemobs.WithStaleClock(s.Clock.Now), idemobs.WithStaleGrace(s.Grace),
		idemobs.WithStaleScanInterval(s.Interval))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// Run calls check at each step with what the exporter should report
// then: claims whose lease expired more than the grace ago are counted,
// running (heartbeating) and finished ones are not, and a scan is reused
// for the interval.
func (s *Stale) Run(t testing.TB, check func(step string, want idemobs.Stale)) {
	t.Helper()
	check("fresh", idemobs.Stale{})
	s.Clock.Advance(10 * time.Second)
	// The first scan is reused for a minute: still the fresh result.
	check("cached", idemobs.Stale{})
	s.Clock.Advance(55 * time.Second)
	if err := s.Store.Heartbeat(context.Background(), s.running); err != nil {
		t.Fatal(err)
	}
	// 65s after the claims: crashed-a's lease expired 64s ago,
	// crashed-bb's 60s ago; running heartbeated just now; done finished.
	check("rescanned", idemobs.Stale{Count: 2, Oldest: 64 * time.Second})
}
