package firestorestore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
)

// TestStepNameAtTheFieldPathLimit: the steps map's key of a name (the
// name, "~" and the name for an escaped one) goes into a field path
// "sp.<key>", which Firestore keeps under 1,500 bytes. A name whose path
// fits runs once and replays after a crash; one byte more is refused with
// idem.ErrStep before the step runs. Before, it ran, failed to be recorded
// (InvalidArgument: property path is longer than 1500 bytes) and ran
// again on every retry.
func TestStepNameAtTheFieldPathLimit(t *testing.T) {
	s := newStore(t, emulator(t))
	g := idem.NewGuard(s)
	spec := &idem.Spec{Name: "firestorestore.test.StepName", Lease: 30 * time.Second, TTL: time.Hour}
	tests := []struct {
		name    string
		step    string
		refused bool
	}{
		{"plain at the limit", strings.Repeat("s", 1496), false},
		{"plain past the limit", strings.Repeat("s", 1497), true},
		{"escaped at the limit", "~" + strings.Repeat("s", 1494), false},
		{"escaped past the limit", "~" + strings.Repeat("s", 1495), true},
		{"multibyte at the limit", strings.Repeat("é", 748), false},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runs := 0
			crash := errors.New("crash")
			var errs []bool
			body := func(die bool) func(context.Context) (int, error) {
				return func(ctx context.Context) (int, error) {
					_, err := idem.Step(ctx, tc.step, func(context.Context) (int, error) { runs++; return runs, nil })
					errs = append(errs, errors.Is(err, idem.ErrStep))
					if die {
						panic(crash)
					}
					return 0, err
				}
			}
			run := func(die bool) {
				defer func() {
					if p := recover(); p != nil && p != crash {
						panic(p)
					}
				}()
				c := g.Begin(spec, fmt.Sprint(i))
				_, _ = idem.Do(context.Background(), c, body(die))
			}
			run(true)
			run(false)
			type outcome struct {
				Refused []bool
				Runs    int
			}
			want := outcome{[]bool{false, false}, 1}
			if tc.refused {
				want = outcome{[]bool{true, true}, 0}
			}
			if diff := cmp.Diff(want, outcome{errs, runs}); diff != "" {
				t.Errorf("a %d-byte step name, run then retried after a crash (-want +got):\n%s", len(tc.step), diff)
			}
		})
	}
}
