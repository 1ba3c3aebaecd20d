// Package foreign wraps functions and methods of other packages (an SDK
// it cannot annotate) with directives above blank vars naming them, with
// the options the diagnostics of diag_foreign_advice advise; refund.New
// is renamed with as=, as sdk.New takes the name New.
package foreign

import (
	"context"

	"github.com/idemgen/idemgen/testdata/foreign/refund"
	"github.com/idemgen/idemgen/testdata/foreign/sdk"
)

//idem:ttl=24h key=params.Params.IdempotencyKey
var _ = sdk.New

//idem:ttl=1h omit=r2
var _ = (*sdk.IssuesService).Create

// A second method of IssuesService: one wrapper type holds both.
//
//idem:on_duplicate=raise
var _ = (*sdk.IssuesService).Lock

// Refunds are keyed by payment and amount.
//
//idem:as=NewRefund on_duplicate=raise
var _ = refund.New

// Ship is the package's own annotated function, beside the wrapped ones.
//
//idem:ttl=1h
func Ship(ctx context.Context, order string) error { return nil }
