package memstore

import (
	"testing"
	"time"
)

var sinkTime time.Time

// BenchmarkClockRead is what monoNow saves over time.Now, which reads the
// wall clock too (docs/BENCHMARKS.md, "What the runtime's optimisations
// save").
func BenchmarkClockRead(b *testing.B) {
	b.Run("time_Now", func(b *testing.B) {
		for b.Loop() {
			sinkTime = time.Now()
		}
	})
	b.Run("monoNow", func(b *testing.B) {
		for b.Loop() {
			sinkTime = monoNow()
		}
	})
}
