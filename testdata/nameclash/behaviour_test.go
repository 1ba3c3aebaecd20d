package nameclash

import (
	"context"
	"image"
	"testing"
)

func TestNameClash(t *testing.T) {
	ctx := context.Background()
	g := newGuard(t)
	api, svc := NewIdempotent(g), NewIdempotentService(&Service{}, g)
	for i := 0; i < 2; i++ {
		api.ServiceCharge(ctx, Point{1, 2, 3})
		svc.Charge(ctx, image.Pt(1, 2))
		svc.g(ctx, 1)
	}
	if n := runs.Load(); n != 3 {
		t.Fatalf("ran %d times, want 3", n)
	}
}
