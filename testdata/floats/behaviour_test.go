package floats

import (
	"context"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// bits compares floats bit for bit: NaN equals NaN, -0 differs from 0.
var bits = cmp.Options{
	cmp.Comparer(func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }),
	cmp.Comparer(func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }),
	cmp.Comparer(func(a, b complex128) bool {
		return math.Float64bits(real(a)) == math.Float64bits(real(b)) && math.Float64bits(imag(a)) == math.Float64bits(imag(b))
	}),
}

func TestFloatsBitExact(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) { floatsBitExact(t, NewIdempotent(ng.g)) })
	}
}

func floatsBitExact(t *testing.T, api *Idempotent) {
	ctx := context.Background()
	before := runs.Load()
	s1, f1, err := api.Summarize(ctx, "x")
	if err != nil {
		t.Fatalf("first call: %v (encoding/json fails on NaN)", err)
	}
	s2, f2, err := api.Summarize(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if n := runs.Load() - before; n != 1 {
		t.Fatalf("ran %d times", n)
	}
	if diff := cmp.Diff(s1, s2, bits); diff != "" {
		t.Errorf("stats replay differs (-first +replay):\n%s", diff)
	}
	if diff := cmp.Diff(f1, f2, bits); diff != "" {
		t.Errorf("[]float32 replay differs (-first +replay):\n%s", diff)
	}
	if !math.Signbit(*s2.Peak) || s2.Peak == s1.Peak {
		t.Errorf("Peak: want a fresh pointer to -0")
	}
}
