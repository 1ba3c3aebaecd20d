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
	// Taken names: the helpers are named around them, and what had the
	// name keeps it.
	if got := svc.ChargeKey(); got != "service's own" {
		t.Errorf("svc.ChargeKey() = %q: the Key helper shadowed Service.ChargeKey", got)
	}
	k1, err1 := svc.ChargeIdemKey(image.Pt(1, 2))
	k2, err2 := api.CancelIdemKey("a")
	k3, err3 := api.CancelKeyKey("a")
	if err1 != nil || err2 != nil || err3 != nil || k1 == "" || k2 == k3 {
		t.Errorf("Key helpers: %q %v, %q %v, %q %v", k1, err1, k2, err2, k3, err3)
	}
	if err := api.CancelKey(ctx, "a"); err != nil {
		t.Fatal(err)
	}
}
