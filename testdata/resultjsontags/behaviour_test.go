package p

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestJSONTagsReplayed(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) { jsonTagsReplayed(t, NewIdempotent(ng.g)) })
	}
}

func jsonTagsReplayed(t *testing.T, api *Idempotent) {
	first, err := api.F(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	replay, err := api.F(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, replay); diff != "" {
		t.Errorf("replay differs (-first +replay):\n%s", diff)
	}
	if replay.Cache != "warm" || replay.Items == nil || replay.Tags == nil || replay.None != nil {
		t.Errorf("replay %#v: want Cache kept, empty Items and Tags non-nil, None nil", replay)
	}
}
