// Package floats returns NaN, ±Inf and -0, which encoding/json cannot
// encode: the generated codec stores their bits.
package floats

import (
	"context"
	"math"
	"sync/atomic"
)

var runs atomic.Int64

// Stats are summary statistics.
type Stats struct {
	Mean, Min, Max, Zero float64
	Ratio                float32
	Samples              []float64
	ByName               map[string]float64
	Peak                 *float64
	Complex              complex128
}

// Summarize computes statistics of nothing.
//
//idem:ttl=1h
func Summarize(ctx context.Context, name string) (Stats, []float32, error) {
	runs.Add(1)
	negZero := math.Copysign(0, -1)
	return Stats{
		Mean: math.NaN(), Min: math.Inf(1), Max: math.Inf(-1), Zero: negZero,
		Ratio:   float32(math.Inf(-1)),
		Samples: []float64{math.NaN(), negZero, 1e-310, math.MaxFloat64},
		ByName:  map[string]float64{"nan": math.NaN(), "neg0": negZero},
		Peak:    &negZero,
		Complex: complex(math.NaN(), math.Inf(1)),
	}, []float32{float32(math.NaN()), float32(negZero)}, nil
}
