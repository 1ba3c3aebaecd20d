package p

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEmbeddedReplayed(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			api := NewIdempotent(ng.g)
			q := Query{Page: Page{Page: 1}, Channel: "general"}
			first, err := api.List(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			replay, err := api.List(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(first, replay); diff != "" {
				t.Errorf("replay differs (-first +replay):\n%s", diff)
			}
		})
	}
}
