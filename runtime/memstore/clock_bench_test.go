package memstore

import (
	"testing"
	"time"
)

var (
	sinkTime    time.Time
	sinkInstant instant
)

// BenchmarkClockRead is what reading the clock as an instant saves over a
// time.Time on the monotonic clock alone, and over time.Now, which reads
// the wall clock too (docs/BENCHMARKS.md, "What the runtime's
// optimisations save").
func BenchmarkClockRead(b *testing.B) {
	b.Run("time_Now", func(b *testing.B) {
		for b.Loop() {
			sinkTime = time.Now()
		}
	})
	b.Run("monotonic_time", func(b *testing.B) {
		for b.Loop() {
			sinkTime = monoBase.Add(time.Since(monoBase))
		}
	})
	s := New()
	b.Run("instant", func(b *testing.B) {
		for b.Loop() {
			sinkInstant = s.clock()
		}
	})
}
