package multiresult

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMultiResult(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	r1, p1, rc1, err := api.Split(ctx, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	r2, p2, rc2, err := api.Split(ctx, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	if r1 != r2 || !cmp.Equal(p1, p2) || !cmp.Equal(rc1, rc2) {
		t.Errorf("replay differs: %v %v %v vs %v %v %v", r1, p1, rc1, r2, p2, rc2)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("ran %d times, want 1", n)
	}
}

func TestNamedResults(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	before := runs.Load()
	for range 2 {
		price, currency, ok, err := api.Quote(ctx, "sku-1")
		if err != nil || price != 1299 || currency != "EUR" || !ok {
			t.Fatalf("Quote: %v %q %v %v", price, currency, ok, err)
		}
	}
	if n := runs.Load() - before; n != 1 {
		t.Errorf("ran %d times, want 1", n)
	}
}
