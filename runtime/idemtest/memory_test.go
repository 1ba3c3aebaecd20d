package idemtest_test

import (
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

func TestMemoryStoreConformance(t *testing.T) {
	idemtest.RunStoreSuite(t, idemtest.Harness{
		New: func(t *testing.T, now func() time.Time) idemstore.Store {
			return memstore.New(memstore.WithClock(now), memstore.WithPollInterval(5*time.Millisecond))
		},
		ManualClock: true,
	})
}

// The suite also holds with real time, as networked stores run it.
func TestMemoryStoreConformanceRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time run skipped in -short mode")
	}
	idemtest.RunStoreSuite(t, idemtest.Harness{
		New:   func(t *testing.T, now func() time.Time) idemstore.Store { return memstore.New() },
		Lease: 200 * time.Millisecond,
	})
}
