package payments

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/idemgen/idemgen/testdata/payments/sdk"
)

func TestChargeOnce(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			api := NewIdempotent(ng.g)
			before := runs.Load()
			p := ChargeParams{Customer: "cus_1", Amount: 1250, Currency: "eur"}
			first, err := api.CreateCharge(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				replay, err := api.CreateCharge(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				// Every exported field comes back, json:"-" and empty
				// omitempty slices and maps included; the unexported raw
				// body does not.
				if diff := cmp.Diff(first, replay, cmpopts.IgnoreUnexported(sdk.APIResponse{})); diff != "" {
					t.Errorf("replay differs (-first +replay):\n%s", diff)
				}
				if replay.LastResponse == nil || replay.Refunds == nil || replay.Metadata == nil {
					t.Fatalf("replay lost LastResponse or turned empty into nil: %+v", replay)
				}
				if replay.LastResponse.Raw() != nil {
					t.Errorf("the unexported raw body was replayed")
				}
			}
			if n := runs.Load() - before; n != 1 {
				t.Fatalf("charged %d times", n)
			}
		})
	}
}
