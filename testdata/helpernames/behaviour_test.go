package helpernames

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The wrappers' helpers are numbered around the package's own names, and
// key and store as any others: a replay answers with the first call's
// result, another request runs.
func TestHelpersNumberedAroundPackageNames(t *testing.T) {
	for _, g := range guards(t) {
		t.Run(g.store, func(t *testing.T) {
			x := NewIdempotent(g.g)
			ctx := context.Background()
			before := executions.Load()
			tests := []struct {
				name string
				req  Request
				want Res
				runs int32 // executions so far
			}{
				{"first", Request{ID: "a", Units: 2}, Res{Total: 4, Note: "the package's own"}, 1},
				{"replay", Request{ID: "a", Units: 2}, Res{Total: 4, Note: "the package's own"}, 1},
				{"another request", Request{ID: "b", Units: 3}, Res{Total: 6, Note: "the package's own"}, 2},
			}
			for _, tt := range tests {
				got, err := x.Charge(ctx, tt.req)
				if err != nil {
					t.Fatalf("%s: %v", tt.name, err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("%s: result (-want +got):\n%s", tt.name, diff)
				}
				if n := executions.Load() - before; n != tt.runs {
					t.Errorf("%s: %d executions, want %d", tt.name, n, tt.runs)
				}
			}
			if got := idemKeyRequest(); got != "the package's own" {
				t.Errorf("the package's idemKeyRequest returns %q", got)
			}
		})
	}
}
