package sdkparams

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/idemgen/idemgen/runtime/idem"

	"github.com/idemgen/idemgen/testdata/sdkparams/sdk"
)

func ptr[T any](v T) *T { return &v }

func TestChargeKeyedByTheSDKsIdempotencyKey(t *testing.T) {
	params := func(key string, amount int64, ctx context.Context, extra string) *sdk.ChargeParams {
		p := &sdk.ChargeParams{Amount: ptr(amount), Currency: ptr("eur")}
		p.Context, p.IdempotencyKey, p.Metadata = ctx, ptr(key), map[string]string{"order": "o1"}
		p.SetExtra("x", extra)
		return p
	}
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			api := NewIdempotent(ng.g)
			before := runs.Load()
			first, err := api.Charge(ctx, params("k-"+ng.store, 100, ctx, "a"))
			if err != nil {
				t.Fatal(err)
			}
			// Another context and other unexported state: the same call.
			replay, err := api.Charge(ctx, params("k-"+ng.store, 100, nil, "b"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(first, replay); diff != "" {
				t.Errorf("replay (-first +replay):\n%s", diff)
			}
			if n := runs.Load() - before; n != 1 {
				t.Fatalf("charged %d times", n)
			}
			// The same key with another amount is a reused key, not a replay.
			if _, err := api.Charge(ctx, params("k-"+ng.store, 200, ctx, "a")); !errors.Is(err, idem.ErrPayloadMismatch) {
				t.Fatalf("another amount under one key: %v, want ErrPayloadMismatch", err)
			}
		})
	}
}
