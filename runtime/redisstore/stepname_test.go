package redisstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
)

// TestStepNamePastTheLimit: a step name that alone passes what the store
// records is refused with idem.ErrStep before the step runs, instead of
// running and then failing to be recorded (ErrResultTooLarge) on every
// retry; a shorter name runs.
func TestStepNamePastTheLimit(t *testing.T) {
	s := newStore(t, standalone(t))
	s.maxRecord = 1000
	g := idem.NewGuard(s)
	spec := &idem.Spec{Name: "redisstore.test.StepName", Lease: 30 * time.Second, TTL: time.Hour}
	tests := []struct {
		name    string
		step    string
		refused bool
	}{
		{"short", strings.Repeat("s", 100), false},
		{"past the limit", strings.Repeat("s", 1200), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runs := 0
			var stepErr error
			c, k := g.Begin(spec)
			k.Key().String(tc.name)
			_, _ = idem.Do(context.Background(), c, func(ctx context.Context) (int, error) {
				_, stepErr = idem.Step(ctx, tc.step, func(context.Context) (int, error) { runs++; return runs, nil })
				return 0, stepErr
			})
			type outcome struct {
				Refused bool
				Runs    int
			}
			want := outcome{false, 1}
			if tc.refused {
				want = outcome{true, 0}
			}
			if diff := cmp.Diff(want, outcome{errors.Is(stepErr, idem.ErrStep), runs}); diff != "" {
				t.Errorf("a %d-byte step name (-want +got):\n%s", len(tc.step), diff)
			}
		})
	}
}
