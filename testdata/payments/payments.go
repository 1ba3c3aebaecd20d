// Package payments wraps a payments-SDK-style call, "charge once": the
// resource embeds its transport metadata tagged json:"-" and omitempty
// slices and maps; the plain annotation wraps it.
package payments

import (
	"context"
	"sync/atomic"

	"github.com/idemgen/idemgen/testdata/payments/sdk"
)

var runs atomic.Int64

// ChargeParams is what a charge is made from.
type ChargeParams struct {
	Customer string
	Amount   int64
	Currency string
}

// CreateCharge charges a card once per parameters.
//
//idem:ttl=24h
func CreateCharge(ctx context.Context, p ChargeParams) (*sdk.Charge, error) {
	n := runs.Add(1)
	return &sdk.Charge{
		APIResource: sdk.APIResource{LastResponse: sdk.NewAPIResponse(200, "req_"+p.Customer, []byte(`{"id":"ch_1"}`))},
		ID:          "ch_" + p.Customer,
		Amount:      p.Amount + n - 1, // a second run would show
		Currency:    p.Currency,
		Captured:    true,
		Refunds:     []*sdk.Refund{},
		Metadata:    map[string]string{},
		Outcome:     &sdk.Outcome{Type: "authorized", RiskScore: 0.25},
	}, nil
}
