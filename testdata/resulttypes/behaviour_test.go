package resulttypes

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResultRoundTrip(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	first, err := api.Build(ctx, "q1")
	if err != nil {
		t.Fatal(err)
	}
	errs := storm(8, func() error {
		replay, err := api.Build(ctx, "q1")
		if err == nil {
			if diff := cmp.Diff(first, replay, cmp.AllowUnexported(Report{}, Money{})); diff != "" {
				t.Errorf("replay differs (-first +replay):\n%s", diff)
			}
		}
		return err
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("ran %d times", n)
	}
}
