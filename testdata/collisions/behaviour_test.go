package collisions

import (
	stdctx "context"
	"errors"

	rt "github.com/idemgen/idemgen/runtime/idem"
	"testing"
)

func TestCollisions(t *testing.T) {
	ctx := stdctx.Background()
	api := NewIdempotent(newGuard(t))
	api.Pay(ctx, "g", 1, true, []string{"r"}, "e", 2)
	api.Pay(ctx, "g", 1, true, []string{"r"}, "e", 2)
	a, n, err := api.Tick(ctx, "id", 3, context{}, nil)
	if err != nil || a != "id" || n != 3 {
		t.Fatal(a, n, err)
	}
	// key=idem2: the other parameters are the payload.
	if _, _, err = api.Tick(ctx, "id", 3, context{}, []byte("b")); !errors.Is(err, rt.ErrPayloadMismatch) {
		t.Fatal(err)
	}
	if got := runs.Load(); got != 2 {
		t.Fatalf("ran %d times, want 2", got)
	}
	box := NewIdempotentBox(&Box{}, newGuard(t))
	for range 2 {
		if n, err := box.Put(ctx, 5); err != nil || n != 5 {
			t.Fatalf("Put: %d %v, want 5 (replayed)", n, err)
		}
	}
	if n, err := box.Peek(ctx); err != nil || n != 5 {
		t.Fatalf("Peek: %d %v", n, err)
	}
	if err := box.Empty(ctx); err != nil {
		t.Fatal(err)
	}
	if k, err := box.PutKey(5); err != nil || k == "" {
		t.Fatalf("PutKey: %q %v", k, err)
	}
	if got := runs.Load(); got != 3 {
		t.Fatalf("ran %d times, want 3", got)
	}
	_ = idem
	_ = time()
	_ = idemSpecPay
}
