package idemotel_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/idemgen/idemgen/runtime/idemobs"
	"github.com/idemgen/idemgen/runtime/idemobs/obstest"
	"github.com/idemgen/idemgen/runtime/idemotel"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TestStaleClaims: the gauges report the shared stale-claim script
// (obstest.Stale) as the scanner counts it.
func TestStaleClaims(t *testing.T) {
	fx := obstest.NewStale(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	sc, err := idemotel.NewStaleClaims(fx.Scanner(t), idemotel.WithStaleMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	fx.Run(t, func(step string, want idemobs.Stale) {
		t.Helper()
		got := collect(t, reader)
		n, ok := got[idemotel.StaleClaimsName].Data.(metricdata.Gauge[int64])
		if !ok || len(n.DataPoints) != 1 || n.DataPoints[0].Value != int64(want.Count) {
			t.Errorf("%s: %s = %+v; want %d", step, idemotel.StaleClaimsName, got[idemotel.StaleClaimsName].Data, want.Count)
		}
		age, ok := got[idemotel.StaleClaimAgeName].Data.(metricdata.Gauge[float64])
		if !ok || len(age.DataPoints) != 1 || age.DataPoints[0].Value != want.Oldest.Seconds() {
			t.Errorf("%s: %s = %+v; want %v", step, idemotel.StaleClaimAgeName, got[idemotel.StaleClaimAgeName].Data, want.Oldest.Seconds())
		}
	})
}

type failingAdmin struct{ idemstore.Admin }

func (failingAdmin) List(context.Context, string, func(idemstore.Record) error) error {
	return errors.New("store down")
}

// TestStaleClaimsScanError: a failed scan observes nothing and returns
// its error to the SDK rather than reporting zero stale claims.
func TestStaleClaimsScanError(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	scanner, err := idemobs.NewStaleScanner(failingAdmin{})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := idemotel.NewStaleClaims(scanner, idemotel.WithStaleMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err == nil || !strings.Contains(err.Error(), "store down") {
		t.Fatalf("Collect = %v; want the scan's error", err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == idemotel.StaleClaimsName || m.Name == idemotel.StaleClaimAgeName {
				t.Errorf("%s observed after a failed scan: %+v", m.Name, m.Data)
			}
		}
	}
}

// TestNewStaleClaimsNilScanner: gauges without a scanner are refused when
// they are built, not at the first collection.
func TestNewStaleClaimsNilScanner(t *testing.T) {
	if sc, err := idemotel.NewStaleClaims(nil); err == nil {
		t.Fatalf("NewStaleClaims(nil) = %v, nil; want an error", sc)
	}
}
