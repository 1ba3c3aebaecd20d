package idem

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPackageNamedIdem(t *testing.T) {
	ctx := context.Background()
	g := newGuard(t)
	api := NewIdempotent(g)
	a, _ := api.Lookup(ctx, Input{Who: "a"}, "bob")
	b, _ := api.Lookup(ctx, Input{Who: "a", Pair: Pair[string, int]{"x", 1}}, "bob")
	if a != b || runs.Load() != 1 {
		t.Fatalf("%v %v ran %d", a, b, runs.Load())
	}
	gw := NewIdempotentGuard(&Guard{}, g)
	x, _ := gw.Check(ctx, []ID{"a", "b"})
	y, _ := gw.Check(ctx, []ID{"a", "b"})
	if !cmp.Equal(x, y) || runs.Load() != 2 {
		t.Fatalf("%v %v ran %d", x, y, runs.Load())
	}
}
