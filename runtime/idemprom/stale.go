package idemprom

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemobs"
)

// StaleClaims is a prometheus.Collector counting a store's stale claims:
// in-progress records whose owner's lease expired more than a grace ago,
// so an owner that crashed or stopped heartbeating with no duplicate
// arriving to take its key over (a stuck lock, what a lock monitor
// alerts on). It lists the store through idem.Admin (the Redis,
// PostgreSQL, file and Firestore stores; `idemctl list -stale` shows the
// records themselves):
//
//	idem_stale_claims                  gauge  stale claims at the last scan
//	idem_stale_claim_age_seconds       gauge  how long ago the oldest one's
//	                                          lease expired (0 with none)
//
// The scan is runtime/idemobs's StaleScanner: a scan reads every record,
// so the collector scans at most once per scan interval (default 1m) and
// serves the last result in between, and bounds a scan by a timeout
// (default 10s); a failed scan makes the scrape report the error. Leases
// are the store's (server) times and are compared with the collector's
// clock: the grace (default 10s) absorbs the difference between the two
// clocks.
type StaleClaims struct {
	scanner    *idemobs.StaleScanner
	count, age *prometheus.Desc
}

// StaleOption configures StaleClaims.
type StaleOption func(*staleConfig)

type staleConfig struct {
	ns   string
	scan []idemobs.StaleOption
}

// scanOption passes o on to the collector's idemobs.StaleScanner.
func scanOption(o idemobs.StaleOption) StaleOption {
	return func(c *staleConfig) { c.scan = append(c.scan, o) }
}

// WithStaleGrace counts a claim as stale only once its lease expired this
// long ago (default 10s; idemobs.WithStaleGrace).
func WithStaleGrace(d time.Duration) StaleOption { return scanOption(idemobs.WithStaleGrace(d)) }

// WithStaleScanInterval sets how often the store is scanned at most
// (default 1m); scrapes in between report the last scan.
func WithStaleScanInterval(d time.Duration) StaleOption {
	return scanOption(idemobs.WithStaleScanInterval(d))
}

// WithStaleScanTimeout bounds one scan (default 10s).
func WithStaleScanTimeout(d time.Duration) StaleOption {
	return scanOption(idemobs.WithStaleScanTimeout(d))
}

// WithStalePrefix counts only records whose store key starts with prefix
// (a Guard's idem.WithKeyPrefix, a function's "prefix+name:").
func WithStalePrefix(p string) StaleOption { return scanOption(idemobs.WithStalePrefix(p)) }

// WithStaleClock replaces time.Now (tests).
func WithStaleClock(now func() time.Time) StaleOption { return scanOption(idemobs.WithStaleClock(now)) }

// WithStaleNamespace sets the metrics' namespace (default "idem").
func WithStaleNamespace(ns string) StaleOption { return func(c *staleConfig) { c.ns = ns } }

// NewStaleClaims returns the collector for admin (register it with a
// prometheus.Registerer).
func NewStaleClaims(admin idem.Admin, opts ...StaleOption) *StaleClaims {
	c := staleConfig{ns: "idem"}
	for _, o := range opts {
		o(&c)
	}
	return &StaleClaims{
		scanner: idemobs.NewStaleScanner(admin, c.scan...),
		count: prometheus.NewDesc(prometheus.BuildFQName(c.ns, "", "stale_claims"),
			"In-progress records whose owner's lease expired (more than the grace ago) without a takeover, at the last scan.", nil, nil),
		age: prometheus.NewDesc(prometheus.BuildFQName(c.ns, "", "stale_claim_age_seconds"),
			"Seconds since the lease of the oldest stale claim expired, at the last scan (0 with none).", nil, nil),
	}
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
