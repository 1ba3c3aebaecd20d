package idemtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// StepNameLimit checks a store whose step names have a length limit: a
// step named with within bytes runs once, and one named with past bytes
// is refused with an error wrapping idem.ErrStep before it runs, instead
// of running and then failing to be recorded on every retry.
func StepNameLimit(t *testing.T, s idemstore.Store, within, past int) {
	t.Helper()
	g := idem.NewGuard(s)
	spec := &idem.Spec{Name: "idemtest.StepNameLimit." + t.Name(), Lease: 30 * time.Second, TTL: time.Hour}
	tests := []struct {
		name    string
		size    int
		refused bool
	}{
		{"within the limit", within, false},
		{"past the limit", past, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runs := 0
			var stepErr error
			c := g.Begin(spec, tc.name)
			_, _ = idem.Do(context.Background(), c, func(ctx context.Context) (int, error) {
				_, stepErr = idem.Step(ctx, strings.Repeat("s", tc.size), func(context.Context) (int, error) { runs++; return runs, nil })
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
				t.Errorf("a %d-byte step name (-want +got):\n%s", tc.size, diff)
			}
		})
	}
}
