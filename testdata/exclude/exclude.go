// Package exclude: exclude= removes delivery metadata from the default
// key, whole parameters or nested fields; idem:"-" does it per field.
package exclude

import (
	"context"
	"sync/atomic"
	"time"
)

var runs atomic.Int64

type Order struct {
	ID       string
	Customer *Customer
	Trace    Trace
	Attempt  int `idem:"-"`
}

type Customer struct {
	ID        string
	UpdatedAt time.Time
}

type Trace struct {
	SpanID string
	Sent   time.Time
}

type Delivery struct {
	Broker   string
	Redelivs int
}

// Fulfil ships an order.
//
//idem:exclude=meta,order.Trace.Sent,order.Customer.UpdatedAt
func Fulfil(ctx context.Context, order Order, meta Delivery) (int64, error) {
	return runs.Add(1), nil
}
