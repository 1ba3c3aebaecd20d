// Package webhookhandler is one annotation serving two deliveries of the
// same event: a webhook endpoint (idemhook.NewWrapped) and a queue
// consumer's loop, both keyed by the event's own ID.
package webhookhandler

import (
	"context"
	"sync/atomic"
)

// InvoicePaid is a Stripe-style event: its ID is in the payload.
type InvoicePaid struct {
	ID     string `json:"id"`
	Amount int64  `json:"amount"`
}

var booked atomic.Int64

// Book books a paid invoice once per event, however it arrives.
//
//idem:key=ev.ID
func Book(ctx context.Context, ev InvoicePaid) error {
	booked.Add(1)
	return nil
}
