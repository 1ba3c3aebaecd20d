package keyhelperfailed

import (
	"context"
	"errors"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/testdata/keyhelperfailed/mnet"
)

// A Plain runs once per value; a Connection, the variant no key can read,
// is refused when the call starts, never keyed as something else.
func TestUnionWithUnkeyableVariant(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	for range 2 {
		if got, err := api.Describe(ctx, mnet.Plain{Name: "a"}); err != nil || got != "plain" {
			t.Fatalf("Describe(Plain) = %q, %v", got, err)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("ran %d times, want 1", n)
	}
	if _, err := api.Describe(ctx, mnet.Connection{ID: "c"}); !errors.Is(err, idem.ErrInvalidKey) {
		t.Fatalf("Describe(Connection): %v, want ErrInvalidKey", err)
	}
	if _, err := api.Stream(ctx, mnet.Plain{Name: "a"}); err != nil {
		t.Fatal(err)
	}
}
