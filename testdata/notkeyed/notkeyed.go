// Package notkeyed: a context inside a parameter struct and functional
// options are left out of the default key, and the wrapper's doc line
// names each.
package notkeyed

import (
	"context"
	"sync/atomic"

	"github.com/idemgen/idemgen/testdata/notkeyed/option"
)

var runs atomic.Int64

// Params is what every request embeds.
type Params struct {
	Context        context.Context
	IdempotencyKey string
}

// ChargeParams are a charge's parameters.
type ChargeParams struct {
	Params
	Amount int64
}

// Options configure a call.
type Options struct{ Region string }

// Charge charges once per parameters, whatever its options.
//
//idem:ttl=1h
func Charge(ctx context.Context, params *ChargeParams, opts ...func(*Options)) (int64, error) {
	return runs.Add(1), nil
}

// Refund takes options of named types.
//
//idem:ttl=1h
func Refund(ctx context.Context, params ChargeParams, o option.RequestOption, more ...option.ClientOption) (int64, error) {
	return runs.Add(1), nil
}

// Capture keys on the amount only; the payload leaves the context out too.
//
//idem:key=params.Amount
func Capture(ctx context.Context, params ChargeParams, done func()) (int64, error) {
	return runs.Add(1), nil
}
