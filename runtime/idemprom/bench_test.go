package idemprom_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemobs/obstest"
	"github.com/idemgen/idemgen/runtime/idemprom"
)

// BenchmarkReplayObserved: a memory-store replay with the Prometheus
// observer against the same replay unobserved (goal: under 15% overhead).
func BenchmarkReplayObserved(b *testing.B) {
	obstest.BenchReplay(b, idemprom.MustNew(prometheus.NewRegistry()))
}

// BenchmarkObserve is the observer alone, for one function and outcome.
func BenchmarkObserve(b *testing.B) {
	obs := idemprom.MustNew(prometheus.NewRegistry())
	e := idem.Event{Func: "shop.Charge", Outcome: idem.OutcomeReplayed, Fence: 1, Duration: 3 * time.Microsecond}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		obs.Observe(e)
	}
}
