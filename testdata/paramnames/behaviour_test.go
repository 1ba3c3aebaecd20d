package paramnames

import (
	"context"
	"testing"
)

func TestParamNames(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	api.Store(ctx, "a", 1)
	api.Store(ctx, "a", 1)
	api.Blank(ctx, "a", 2)
	api.Blank(ctx, "b", 2) // a blank parameter is still part of the key
	it, err := api.Shadow("s", Item{"i"}, 1, "x", []int{1})
	if err != nil || it.ID != "i" {
		t.Fatal(it, err)
	}
	api.Shadow("s", Item{"i"}, 1, "x", []int{1})
	n, err := api.Later("k", ctx, 5)
	if err != nil || n != 5 {
		t.Fatal(n, err)
	}
	if got := runs.Load(); got != 5 {
		t.Fatalf("ran %d times, want 5", got)
	}
}
