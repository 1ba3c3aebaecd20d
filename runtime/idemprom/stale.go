package idemprom

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgen/idemgen/runtime/idemobs"
)

// StaleClaims is a prometheus.Collector exporting a StaleScanner's count
// of a store's stale claims (in-progress records whose owner's lease
// expired more than a grace ago: an owner that crashed or stopped
// heartbeating with no duplicate arriving to take its key over, a stuck
// lock, what a lock monitor alerts on; `idemctl list -stale` shows the
// records themselves):
//
//	idem_stale_claims                  gauge  stale claims at the last scan
//	idem_stale_claim_age_seconds       gauge  how long ago the oldest one's
//	                                          lease expired (0 with none)
//
// The scanner decides how often the store is listed, for how long, with
// what grace and under which prefix (idemobs.NewStaleScanner's options):
// a scrape reports its last scan, scanning first when that one is older
// than the scan interval, and a failed scan makes the scrape report the
// error.
type StaleClaims struct {
	scanner    *idemobs.StaleScanner
	count, age *prometheus.Desc
}

// StaleOption configures NewStaleClaims.
type StaleOption func(*staleConfig)

type staleConfig struct {
	ns string
}

// WithStaleNamespace sets the metrics' namespace (default "idem").
func WithStaleNamespace(ns string) StaleOption { return func(c *staleConfig) { c.ns = ns } }

// NewStaleClaims returns the collector of scanner's result (register it
// with a prometheus.Registerer). It fails on a nil scanner.
func NewStaleClaims(scanner *idemobs.StaleScanner, opts ...StaleOption) (*StaleClaims, error) {
	if scanner == nil {
		return nil, errors.New("idemprom: NewStaleClaims: nil *idemobs.StaleScanner")
	}
	c := staleConfig{ns: "idem"}
	for _, o := range opts {
		o(&c)
	}
	return &StaleClaims{
		scanner: scanner,
		count: prometheus.NewDesc(prometheus.BuildFQName(c.ns, "", "stale_claims"),
			"In-progress records whose owner's lease expired (more than the grace ago) without a takeover, at the last scan.", nil, nil),
		age: prometheus.NewDesc(prometheus.BuildFQName(c.ns, "", "stale_claim_age_seconds"),
			"Seconds since the lease of the oldest stale claim expired, at the last scan (0 with none).", nil, nil),
	}, nil
}

// Describe implements prometheus.Collector.
func (s *StaleClaims) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.count
	ch <- s.age
}

// Collect implements prometheus.Collector: it reports the scanner's
// result, which scans the store if the last scan is older than the scan
// interval. A scrape has no ctx; the scan timeout bounds it.
func (s *StaleClaims) Collect(ch chan<- prometheus.Metric) {
	st, err := s.scanner.Scan(context.Background())
	if err != nil {
		ch <- prometheus.NewInvalidMetric(s.count, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(s.count, prometheus.GaugeValue, float64(st.Count))
	ch <- prometheus.MustNewConstMetric(s.age, prometheus.GaugeValue, st.Oldest.Seconds())
}
