// Package p wraps a payments SDK call whose parameters embed the SDK's
// common Params, as a new user would annotate it.
package p

import (
	"context"

	"github.com/idemgen/idemgen/testdata/diag_sdk_params/sdk"
)

// Charge charges once per parameters.
//
//idem:ttl=24h
func Charge(ctx context.Context, params *sdk.ChargeParams) (*sdk.Charge, error) {
	return &sdk.Charge{ID: "ch_1"}, nil
}
