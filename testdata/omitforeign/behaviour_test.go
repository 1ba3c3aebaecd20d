package omitforeign

import (
	"context"
	"testing"
)

// The call runs once; its replay holds no models (omitted, on the doc
// line), as the wrapper promises.
func TestOmittedFieldsReplayZero(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			api := NewIdempotent(ng.g)
			before := runs.Load()
			if _, err := api.Models(ctx, "acct-"+t.Name()); err != nil {
				t.Fatal(err)
			}
			replay, err := api.Models(ctx, "acct-"+t.Name())
			if err != nil {
				t.Fatal(err)
			}
			if replay.Models != nil {
				t.Errorf("replayed models %v, want none (omitted)", replay.Models)
			}
			if n := runs.Load() - before; n != 1 {
				t.Errorf("ran %d times, want 1", n)
			}
		})
	}
}
