package multifile

import (
	"context"
	"testing"
)

func TestMultiFile(t *testing.T) {
	ctx := context.Background()
	g := newGuard(t)
	api := NewIdempotent(g)
	repo := NewIdempotentRepo(&Repo{name: "r"}, g)
	cache := NewIdempotentCache(&Cache{}, g)
	for i := 0; i < 2; i++ {
		api.Ping(ctx)
		repo.Save(ctx, "x", map[string]string{"a": "b"})
		repo.Load(ctx, "x")
		cache.Fill(ctx)
		api.unexported(ctx, 4)
	}
	if n := runs.Load(); n != 5 {
		t.Fatalf("ran %d times, want 5", n)
	}
}
