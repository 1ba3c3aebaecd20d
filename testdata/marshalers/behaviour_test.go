package marshalers

import (
	"context"
	"errors"
	"math/big"
	"net/netip"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
)

func TestMarshalers(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	pfx := netip.MustParsePrefix("10.0.0.0/8")
	r := Request{From: netip.MustParseAddr("10.1.2.3"), Limit: big.NewInt(10), At: time.Unix(9, 0)}
	api.Allow(ctx, r, pfx)
	r2 := r
	r2.Limit = big.NewInt(10)
	r2.At = time.Unix(9, 0).In(time.FixedZone("Z", 7200))
	api.Allow(ctx, r2, pfx)
	if n := runs.Load(); n != 1 {
		t.Fatalf("ran %d times, want 1", n)
	}
	r2.From = netip.MustParseAddr("10.1.2.4")
	api.Allow(ctx, r2, pfx)
	r2.Level = Level{1}
	api.Allow(ctx, r2, pfx)
	if n := runs.Load(); n != 3 {
		t.Fatalf("ran %d times, want 3", n)
	}
	r2.Level = Level{9}
	if _, err := api.Allow(ctx, r2, pfx); !errors.Is(err, idem.ErrInvalidKey) {
		t.Errorf("failing MarshalText: got %v, want ErrInvalidKey", err)
	}
}
