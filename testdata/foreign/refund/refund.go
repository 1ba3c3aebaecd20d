// Package refund is a second SDK package with a New of its own.
package refund

import (
	"context"
	"sync/atomic"
)

// Runs counts the refunds made.
var Runs atomic.Int64

// Refund is a refund of a payment.
type Refund struct {
	ID     string
	Amount int64
}

// New refunds amount of a payment.
func New(ctx context.Context, payment string, amount int64) (*Refund, error) {
	Runs.Add(1)
	return &Refund{ID: "re_" + payment, Amount: amount}, nil
}
