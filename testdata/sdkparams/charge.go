// Package sdkparams wraps a payments SDK call whose parameters embed the
// SDK's common Params (a context, the SDK's IdempotencyKey, metadata and
// unexported state), with the key= the diagnostics of diag_sdk_params
// advise: the SDK's idempotency key decides the call; the payload
// fingerprint leaves out the context and the unexported state.
package sdkparams

import (
	"context"
	"sync/atomic"

	"github.com/idemgen/idemgen/testdata/sdkparams/sdk"
)

var runs atomic.Int64

// Charge charges once per idempotency key.
//
//idem:ttl=24h key=params.Params.IdempotencyKey
func Charge(ctx context.Context, params *sdk.ChargeParams) (*sdk.Charge, error) {
	return &sdk.Charge{ID: "ch_" + *params.IdempotencyKey, Amount: *params.Amount + runs.Add(1) - 1}, nil
}
