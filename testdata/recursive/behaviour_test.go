package recursive

import (
	"context"
	"testing"
)

func TestRecursive(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	mk := func(leaf string) *Tree {
		return &Tree{Value: "root", Children: []*Tree{{Value: "a"}, {Value: leaf}}, Attrs: map[string]*Tree{"x": {Value: "y"}}}
	}
	l := List{1, &List{2, &List{3, nil}}}
	a := A{&B{ID: 1, A: &A{}}}
	api.Walk(ctx, mk("b"), l, a)
	api.Walk(ctx, mk("b"), l, a)
	if runs.Load() != 1 {
		t.Fatal("same tree ran twice")
	}
	api.Walk(ctx, mk("c"), l, a)
	l2 := List{1, &List{2, &List{4, nil}}}
	api.Walk(ctx, mk("c"), l2, a)
	if n := runs.Load(); n != 3 {
		t.Fatalf("ran %d times, want 3", n)
	}
}
