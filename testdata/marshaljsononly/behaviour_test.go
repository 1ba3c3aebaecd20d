package marshaljsononly

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMarshalJSONOnlyReplayed(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) { marshalJSONOnlyReplayed(t, NewIdempotent(ng.g)) })
	}
}

func marshalJSONOnlyReplayed(t *testing.T, api *Idempotent) {
	ctx := context.Background()
	before := runs.Load()
	first, err := api.Bill(ctx, "i1")
	if err != nil {
		t.Fatal(err)
	}
	replay, err := api.Bill(ctx, "i1")
	if err != nil {
		t.Fatal(err)
	}
	if n := runs.Load() - before; n != 1 {
		t.Fatalf("ran %d times", n)
	}
	if diff := cmp.Diff(first, replay); diff != "" {
		t.Errorf("replay differs (-first +replay):\n%s", diff)
	}
	if replay.Lines == nil {
		t.Errorf("empty Lines replayed as nil")
	}
}
