package idem_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// A result over its budget is recorded as failed with ErrResultTooLarge:
// the first caller gets its value and the error, duplicates the recorded
// failure, and the function never runs again. The Spec's budget wins over
// the Guard's; within budget nothing changes. A step over budget is not
// recorded.
func TestMaxResult(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		guard     int // WithMaxResult
		spec      int // Spec.MaxResult
		size      int
		overflows bool
	}{
		{"no budget", 0, 0, 4096, false},
		{"within the Guard's", 8192, 0, 4096, false},
		{"over the Guard's", 1024, 0, 4096, true},
		{"the Spec's wins", 1024, 8192, 4096, false},
		{"over the Spec's", 0, 1024, 4096, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := idem.NewGuard(memstore.New(), idem.WithMaxResult(tt.guard))
			spec := &idem.Spec{Name: "budget.F", MaxResult: tt.spec}
			runs := 0
			call := func() (string, error) {
				c := g.Begin(spec, "k")
				return idem.Do(ctx, c, func(context.Context) (string, error) {
					runs++
					return strings.Repeat("x", tt.size), nil
				})
			}
			v, err := call()
			if len(v) != tt.size || errors.Is(err, idem.ErrResultTooLarge) != tt.overflows {
				t.Fatalf("first call: %d bytes, %v; want its value and ErrResultTooLarge=%v", len(v), err, tt.overflows)
			}
			v, err = call()
			var rec *idem.RecordedError
			if tt.overflows && (!errors.As(err, &rec) || !errors.Is(err, idem.ErrResultTooLarge)) {
				t.Errorf("duplicate: %v, want the recorded ErrResultTooLarge", err)
			}
			if !tt.overflows && (err != nil || len(v) != tt.size) {
				t.Errorf("duplicate: %d bytes, %v; want the replay", len(v), err)
			}
			if runs != 1 {
				t.Errorf("the function ran %d times, want 1", runs)
			}
		})
	}
	t.Run("step", func(t *testing.T) {
		g := idem.NewGuard(memstore.New(), idem.WithMaxResult(1024))
		c := g.Begin(&idem.Spec{Name: "budget.G"}, "k")
		_, err := idem.Do(ctx, c, func(ctx context.Context) (string, error) {
			return idem.Step(ctx, "big", func(context.Context) (string, error) { return strings.Repeat("x", 4096), nil })
		})
		if !errors.Is(err, idem.ErrResultTooLarge) {
			t.Errorf("step over budget: %v, want ErrResultTooLarge", err)
		}
	})
}
