package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

//go:generate go tool idemgen

// InvoiceRequest is what a checkout sends (and, on a retry, sends again).
type InvoiceRequest struct {
	CustomerID  string
	OrderID     string
	AmountCents int64
	Email       string
}

// Invoice is what CreateInvoice returns, and what every duplicate replays.
type Invoice struct {
	ID          string
	AmountCents int64
	IssuedAt    time.Time
}

// WebhookEvent is a payment provider's notification.
type WebhookEvent struct {
	Type   string
	Amount int64
}

// charges counts real executions: the side effects idemgen guards.
var charges, webhooks atomic.Int64

// CreateInvoice charges the card and emails the receipt. Same customer and
// order: one charge, whatever the number of retries.
//
//idem:ttl=24h lease=30s on_duplicate=wait key=req.CustomerID,req.OrderID
func CreateInvoice(ctx context.Context, req InvoiceRequest) (*Invoice, error) {
	n := charges.Add(1)
	time.Sleep(50 * time.Millisecond) // the card network is slow
	return &Invoice{
		ID:          fmt.Sprintf("inv-%03d", n),
		AmountCents: req.AmountCents,
		IssuedAt:    time.Now().UTC().Truncate(time.Second),
	}, nil
}

// HandleWebhook applies a provider event once per delivery ID. The
// provider's own ID is the key; the event body is fingerprinted, so a
// reused ID with another body is refused rather than replayed.
//
//idem:key=eventID on_failure=lock
func HandleWebhook(ctx context.Context, eventID string, ev WebhookEvent) (string, error) {
	webhooks.Add(1)
	return "applied " + ev.Type, nil
}
