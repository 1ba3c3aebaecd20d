package overlap

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOverlappingPathsMerge(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(*Idempotent, context.Context, ChargeParams) (*Receipt, error)
	}{
		{"shorter first", (*Idempotent).Charge},
		{"longer first", (*Idempotent).Refund},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := NewIdempotent(newGuard(t))
			ctx := context.Background()
			before := runs.Load()
			first, err := tc.call(api, ctx, ChargeParams{Params: Params{Context: ctx, Trace: "t1"}, Amount: 5})
			if err != nil {
				t.Fatal(err)
			}
			// The whole Params is excluded: another trace is the same call.
			replay, err := tc.call(api, ctx, ChargeParams{Params: Params{Trace: "t2"}, Amount: 5})
			if err != nil {
				t.Fatal(err)
			}
			if n := runs.Load() - before; n != 1 {
				t.Fatalf("ran %d times, want 1", n)
			}
			// The whole Meta is omitted, not only Meta.Raw.
			want := &Receipt{ID: first.ID}
			if diff := cmp.Diff(want, replay); diff != "" {
				t.Errorf("replay (-want +got):\n%s", diff)
			}
		})
	}
}
