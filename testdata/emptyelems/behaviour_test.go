package emptyelems

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A replay through the stored bytes keeps every set member, and the
// empty slice's length.
func TestEmptyElementsReplay(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			api := NewIdempotent(ng.g)
			before := runs.Load()
			first, err := api.Tags(ctx, "item-"+t.Name())
			if err != nil {
				t.Fatal(err)
			}
			replay, err := api.Tags(ctx, "item-"+t.Name())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(first, replay); diff != "" {
				t.Errorf("replay (-first +replay):\n%s", diff)
			}
			if n := runs.Load() - before; n != 1 {
				t.Errorf("ran %d times, want 1", n)
			}
		})
	}
}
