package redisstore

import (
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

func TestConformanceStandalone(t *testing.T) {
	rdb := standalone(t)
	idemtest.RunStoreSuite(t, idemtest.Harness{
		New: func(t *testing.T, _ func() time.Time) idem.Store {
			// A short poll keeps the suite's real-time waits tight.
			return newStore(t, rdb, WithPollInterval(50*time.Millisecond))
		},
	})
}

func TestConformanceCluster(t *testing.T) {
	rdb := cluster(t)
	idemtest.RunStoreSuite(t, idemtest.Harness{
		New: func(t *testing.T, _ func() time.Time) idem.Store {
			return newStore(t, rdb, WithPollInterval(50*time.Millisecond))
		},
	})
}
