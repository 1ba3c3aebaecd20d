package pointerpath

import (
	"context"
	"errors"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
)

func TestPointerPath(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	mk := func(amount int) *Request {
		return &Request{Account: &Account{Base: Base{"t"}, ID: 1, Owner: &Person{Email: "e"}}, Amount: amount}
	}
	api.Transfer(ctx, mk(1))
	api.Transfer(ctx, mk(1))
	if _, err := api.Transfer(ctx, mk(2)); !errors.Is(err, idem.ErrPayloadMismatch) {
		t.Errorf("same key, other amount: %v", err)
	}
	// nil pointers on the path do not panic: they are part of the key.
	if _, err := api.Transfer(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Transfer(ctx, &Request{Account: &Account{ID: 1}}); err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 3 {
		t.Fatalf("ran %d times, want 3", n)
	}
}
