package idemobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Stale is the result of a stale-claim scan.
type Stale struct {
	// Count is the number of stale claims.
	Count int
	// Oldest is how long ago the oldest stale claim's lease expired (0
	// with none).
	Oldest time.Duration
}

// StaleScanner counts a store's stale claims: in-progress records whose
// owner's lease expired more than a grace ago, so an owner that crashed
// or stopped heartbeating with no duplicate arriving to take its key over
// (a stuck lock, what a lock monitor alerts on). It lists the store
// through idemstore.Admin (the Redis, PostgreSQL, file and Firestore stores;
// `idemctl list -stale` shows the records themselves). The stale-claim
// gauges of runtime/idemprom and runtime/idemotel export its result: build
// one scanner and hand it to either (or both, which then share its scans).
//
// A scan reads every record, so Scan scans at most once per scan interval
// (default 1m) and returns the last result in between, and bounds a scan
// by a timeout (default 10s). A failed scan is not cached: the next Scan
// retries. Leases are the store's (server) times and are compared with
// the scanner's clock: the grace (default 10s) absorbs the difference
// between the two clocks. A StaleScanner is safe for concurrent use;
// concurrent Scans wait for one scan rather than each listing the store.
type StaleScanner struct {
	admin idemstore.Admin
	staleConfig

	mu      sync.Mutex
	scanned time.Time // when the cached result was taken
	last    Stale
	err     error
}

// StaleOption configures NewStaleScanner.
type StaleOption func(*staleConfig)

type staleConfig struct {
	prefix   string
	now      func() time.Time
	grace    time.Duration
	interval time.Duration
	timeout  time.Duration
}

// WithStaleGrace counts a claim as stale only once its lease expired this
// long ago (default 10s).
func WithStaleGrace(d time.Duration) StaleOption { return func(c *staleConfig) { c.grace = d } }

// WithStaleScanInterval sets how often the store is scanned at most
// (default 1m); Scans in between return the last result.
func WithStaleScanInterval(d time.Duration) StaleOption {
	return func(c *staleConfig) { c.interval = d }
}

// WithStaleScanTimeout bounds one scan (default 10s).
func WithStaleScanTimeout(d time.Duration) StaleOption {
	return func(c *staleConfig) { c.timeout = d }
}

// WithStalePrefix counts only records whose store key starts with prefix
// (a Guard's idem.WithKeyPrefix, a function's "prefix+name:").
func WithStalePrefix(p string) StaleOption { return func(c *staleConfig) { c.prefix = p } }

// WithStaleClock replaces time.Now (tests).
func WithStaleClock(now func() time.Time) StaleOption {
	return func(c *staleConfig) { c.now = now }
}

// NewStaleScanner returns a scanner of admin's stale claims. It fails on
// a nil admin or clock, a negative grace, or an interval or timeout that
// is not positive.
func NewStaleScanner(admin idemstore.Admin, opts ...StaleOption) (*StaleScanner, error) {
	c := staleConfig{now: time.Now, grace: 10 * time.Second, interval: time.Minute, timeout: 10 * time.Second}
	for _, o := range opts {
		o(&c)
	}
	switch {
	case admin == nil:
		return nil, errors.New("idemobs: NewStaleScanner: nil idemstore.Admin")
	case c.now == nil:
		return nil, errors.New("idemobs: WithStaleClock(nil)")
	case c.grace < 0:
		return nil, fmt.Errorf("idemobs: WithStaleGrace(%v): negative", c.grace)
	case c.interval <= 0:
		return nil, fmt.Errorf("idemobs: WithStaleScanInterval(%v): not positive", c.interval)
	case c.timeout <= 0:
		return nil, fmt.Errorf("idemobs: WithStaleScanTimeout(%v): not positive", c.timeout)
	}
	return &StaleScanner{admin: admin, staleConfig: c}, nil
}

// Scan returns the stale claims at the last scan, scanning the store
// first (bounded by the scan timeout and by ctx) if there was none, if it
// failed, or if it is at least the scan interval old.
func (s *StaleScanner) Scan(ctx context.Context) (Stale, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := s.now(); s.scanned.IsZero() || s.err != nil || now.Sub(s.scanned) >= s.interval {
		s.last, s.err = s.scan(ctx, now)
		s.scanned = now
	}
	return s.last, s.err
}

// scan counts the stale claims at now. A record the store cannot decode
// (idem.ErrCorruptRecord, reported after the listing) is not a claim the
// scan can judge; it does not fail the scan.
func (s *StaleScanner) scan(ctx context.Context, now time.Time) (Stale, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var st Stale
	err := s.admin.List(ctx, s.prefix, func(r idemstore.Record) error {
		if r.State != idemstore.StateInProgress || r.LeaseUntil.IsZero() {
			return nil
		}
		if late := now.Sub(r.LeaseUntil); late > s.grace {
			st.Count++
			st.Oldest = max(st.Oldest, late)
		}
		return nil
	})
	if err != nil && !errors.Is(err, idem.ErrCorruptRecord) {
		return Stale{}, err
	}
	return st, nil
}
