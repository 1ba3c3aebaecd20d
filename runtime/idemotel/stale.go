package idemotel

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemobs"
)

// Stale-claim instrument names (see StaleClaims).
const (
	StaleClaimsName   = "idem.stale_claims"
	StaleClaimAgeName = "idem.stale_claim.age"
)

// StaleClaims reports a store's stale claims: in-progress records whose
// owner's lease expired more than a grace ago (an owner that crashed or
// stopped heartbeating, with no duplicate arriving to take its key over;
// what a lock monitor alerts on), by listing the store through idem.Admin
// (the Redis, PostgreSQL, file and Firestore stores):
//
//	idem.stale_claims      Int64ObservableGauge, unit {claim}
//	idem.stale_claim.age   Float64ObservableGauge, unit s: since the
//	                       oldest stale claim's lease expired (0 with none)
//
// the same numbers as runtime/idemprom's StaleClaims, from the same scan
// (runtime/idemobs's StaleScanner). A scan reads every record, so it runs
// at most once per scan interval (default 1m), the collections in between
// report its result, and it is bounded by a timeout (default 10s); a failed scan observes nothing and returns its
// error to the SDK. Leases are the store's times, compared with the
// collector's clock: the grace (default 10s) absorbs the difference.
// Close unregisters the callback.
type StaleClaims struct {
	scanner *idemobs.StaleScanner

	count metric.Int64ObservableGauge
	age   metric.Float64ObservableGauge
	reg   metric.Registration
}

// StaleOption configures StaleClaims.
type StaleOption func(*staleConfig)

type staleConfig struct {
	mp   metric.MeterProvider
	scan []idemobs.StaleOption
}

// scanOption passes o on to the gauges' idemobs.StaleScanner.
func scanOption(o idemobs.StaleOption) StaleOption {
	return func(c *staleConfig) { c.scan = append(c.scan, o) }
}

// WithStaleMeterProvider sets the meter provider (default
// otel.GetMeterProvider()).
func WithStaleMeterProvider(mp metric.MeterProvider) StaleOption {
	return func(c *staleConfig) { c.mp = mp }
}

// WithStaleGrace counts a claim as stale only once its lease expired this
// long ago (default 10s; idemobs.WithStaleGrace).
func WithStaleGrace(d time.Duration) StaleOption { return scanOption(idemobs.WithStaleGrace(d)) }

// WithStaleScanInterval sets how often the store is scanned at most
// (default 1m).
func WithStaleScanInterval(d time.Duration) StaleOption {
	return scanOption(idemobs.WithStaleScanInterval(d))
}

// WithStaleScanTimeout bounds one scan (default 10s).
func WithStaleScanTimeout(d time.Duration) StaleOption {
	return scanOption(idemobs.WithStaleScanTimeout(d))
}

// WithStalePrefix counts only records whose store key starts with prefix.
func WithStalePrefix(p string) StaleOption { return scanOption(idemobs.WithStalePrefix(p)) }

// WithStaleClock replaces time.Now (tests).
func WithStaleClock(now func() time.Time) StaleOption { return scanOption(idemobs.WithStaleClock(now)) }

// NewStaleClaims registers the stale-claim gauges for admin.
func NewStaleClaims(admin idem.Admin, opts ...StaleOption) (*StaleClaims, error) {
	var c staleConfig
	for _, o := range opts {
		o(&c)
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	meter := c.mp.Meter(ScopeName)
	s := &StaleClaims{scanner: idemobs.NewStaleScanner(admin, c.scan...)}
	var err error
	if s.count, err = meter.Int64ObservableGauge(StaleClaimsName, metric.WithUnit("{claim}"),
		metric.WithDescription("In-progress records whose owner's lease expired (more than the grace ago) without a takeover, at the last scan.")); err != nil {
		return nil, fmt.Errorf("idemotel: creating %s: %w", StaleClaimsName, err)
	}
	if s.age, err = meter.Float64ObservableGauge(StaleClaimAgeName, metric.WithUnit("s"),
		metric.WithDescription("Seconds since the lease of the oldest stale claim expired, at the last scan (0 with none).")); err != nil {
		return nil, fmt.Errorf("idemotel: creating %s: %w", StaleClaimAgeName, err)
	}
	if s.reg, err = meter.RegisterCallback(s.collect, s.count, s.age); err != nil {
		return nil, fmt.Errorf("idemotel: registering the stale-claim callback: %w", err)
	}
	return s, nil
}

// Close unregisters the callback.
func (s *StaleClaims) Close() error { return s.reg.Unregister() }

// collect observes the scanner's result; the collection's ctx bounds a
// scan together with the scan timeout.
func (s *StaleClaims) collect(ctx context.Context, obs metric.Observer) error {
	st, err := s.scanner.Scan(ctx)
	if err != nil {
		return fmt.Errorf("idemotel: scanning for stale claims: %w", err)
	}
	obs.ObserveInt64(s.count, int64(st.Count))
	obs.ObserveFloat64(s.age, st.Oldest.Seconds())
	return nil
}
