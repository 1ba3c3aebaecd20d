package idemprom_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/idemgen/idemgen/runtime/idemobs"
	"github.com/idemgen/idemgen/runtime/idemobs/obstest"
	"github.com/idemgen/idemgen/runtime/idemprom"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TestStaleClaims: the gauges report the shared stale-claim script
// (obstest.Stale) as the scanner counts it.
func TestStaleClaims(t *testing.T) {
	fx := obstest.NewStale(t)
	c, err := idemprom.NewStaleClaims(fx.Scanner(t))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	fx.Run(t, func(step string, want idemobs.Stale) {
		t.Helper()
		text := `# HELP idem_stale_claim_age_seconds Seconds since the lease of the oldest stale claim expired, at the last scan (0 with none).
# TYPE idem_stale_claim_age_seconds gauge
idem_stale_claim_age_seconds ` + strconv.FormatFloat(want.Oldest.Seconds(), 'g', -1, 64) + `
# HELP idem_stale_claims In-progress records whose owner's lease expired (more than the grace ago) without a takeover, at the last scan.
# TYPE idem_stale_claims gauge
idem_stale_claims ` + strconv.Itoa(want.Count) + "\n"
		if err := testutil.GatherAndCompare(reg, strings.NewReader(text)); err != nil {
			t.Errorf("%s: %v", step, err)
		}
	})
}

type failingAdmin struct{ idemstore.Admin }

func (failingAdmin) List(context.Context, string, func(idemstore.Record) error) error {
	return errors.New("store down")
}

// TestStaleClaimsScanError: a failed scan fails the scrape with its error
// rather than reporting zero stale claims.
func TestStaleClaimsScanError(t *testing.T) {
	scanner, err := idemobs.NewStaleScanner(failingAdmin{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := idemprom.NewStaleClaims(scanner)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "store down") {
		t.Fatalf("Gather = %v; want the scan's error", err)
	}
}

// TestNewStaleClaimsNilScanner: a collector without a scanner is refused
// when it is built, not at the first scrape.
func TestNewStaleClaimsNilScanner(t *testing.T) {
	if c, err := idemprom.NewStaleClaims(nil); err == nil {
		t.Fatalf("NewStaleClaims(nil) = %v, nil; want an error", c)
	}
}
