package marshaljsononly

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMarshalJSONOnlyReplayed(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	first, err := api.Bill(ctx, "i1")
	if err != nil {
		t.Fatal(err)
	}
	replay, err := api.Bill(ctx, "i1")
	if err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 1 {
		t.Fatalf("ran %d times", runs.Load())
	}
	if diff := cmp.Diff(first, replay); diff != "" {
		t.Errorf("replay differs (-first +replay):\n%s", diff)
	}
	if replay.Lines == nil {
		t.Errorf("empty Lines replayed as nil")
	}
}
