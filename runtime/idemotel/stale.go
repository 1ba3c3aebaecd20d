package idemotel

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/idemgen/idemgen/runtime/idemobs"
)

// Stale-claim instrument names (see StaleClaims).
const (
	StaleClaimsName   = "idem.stale_claims"
	StaleClaimAgeName = "idem.stale_claim.age"
)

// StaleClaims exports a StaleScanner's count of a store's stale claims
// (in-progress records whose owner's lease expired more than a grace ago:
// an owner that crashed or stopped heartbeating, with no duplicate
// arriving to take its key over; what a lock monitor alerts on):
//
//	idem.stale_claims      Int64ObservableGauge, unit {claim}
//	idem.stale_claim.age   Float64ObservableGauge, unit s: since the
//	                       oldest stale claim's lease expired (0 with none)
//
// the same numbers as runtime/idemprom's StaleClaims (one scanner can
// serve both). The scanner decides how often the store is listed, for how
// long, with what grace and under which prefix (idemobs.NewStaleScanner's
// options): a collection reports its last scan, scanning first when that
// one is older than the scan interval, and a failed scan observes nothing
// and returns its error to the SDK. Close unregisters the callback.
type StaleClaims struct {
	scanner *idemobs.StaleScanner

	count metric.Int64ObservableGauge
	age   metric.Float64ObservableGauge
	reg   metric.Registration
}

// StaleOption configures NewStaleClaims.
type StaleOption func(*staleConfig)

type staleConfig struct {
	mp metric.MeterProvider
}

// WithStaleMeterProvider sets the meter provider (default
// otel.GetMeterProvider()).
func WithStaleMeterProvider(mp metric.MeterProvider) StaleOption {
	return func(c *staleConfig) { c.mp = mp }
}

// NewStaleClaims registers the stale-claim gauges reporting scanner's
// result. It fails on a nil scanner or when the SDK refuses an instrument
// or the callback.
func NewStaleClaims(scanner *idemobs.StaleScanner, opts ...StaleOption) (*StaleClaims, error) {
	if scanner == nil {
		return nil, errors.New("idemotel: NewStaleClaims: nil *idemobs.StaleScanner")
	}
	var c staleConfig
	for _, o := range opts {
		o(&c)
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	meter := c.mp.Meter(ScopeName)
	s := &StaleClaims{scanner: scanner}
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
