package p

import (
	"context"
	"math/big"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPromotedPairKeepsTheStruct(t *testing.T) {
	opts := cmp.Options{
		cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
		cmp.Comparer(func(a, b *big.Float) bool {
			if a == nil || b == nil {
				return a == b
			}
			return a.Cmp(b) == 0 && a.Prec() == b.Prec()
		}),
	}
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			api := NewIdempotent(ng.g)
			first, err := api.Get(context.Background(), "n")
			if err != nil {
				t.Fatal(err)
			}
			replay, err := api.Get(context.Background(), "n")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(first, replay, opts); diff != "" {
				t.Errorf("replay differs (-first +replay):\n%s", diff)
			}
		})
	}
}
