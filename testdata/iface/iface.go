// Package iface: interface decorators. Carrier has an annotated method
// with unnamed parameters, one keyed by key=, an unannotated one, an
// embedded io.Closer and an embedded Canceller whose method is annotated
// there; Notifier's own directive guards each of its methods that
// returns error last, one of them with an option of its own.
package iface

import (
	"context"
	"io"
)

// Shipment is what a carrier is asked to move.
type Shipment struct {
	From, To string
	Kg       int
}

// Booking is a carrier's confirmation.
type Booking struct {
	Ref   string
	Cents int64
}

// Carrier is what the shop depends on.
type Carrier interface {
	// Book reserves a pickup: at most once per order and shipment.
	//
	//idem:ttl=1h on_duplicate=wait
	Book(context.Context, string, Shipment) (Booking, error)

	// Quote prices a shipment once per order: another shipment under
	// the same order is a payload mismatch, not a new quote.
	//
	//idem:key=orderID
	Quote(ctx context.Context, orderID string, s Shipment) (int64, error)

	// Track is not annotated: the decorator calls the inner Carrier.
	Track(ref string) (string, error)

	io.Closer
	Canceller
}

// Canceller is embedded in Carrier: IdempotentCarrier's Cancel goes
// through IdempotentCanceller, in the same key space.
type Canceller interface {
	//idem:ttl=2h
	Cancel(ctx context.Context, ref string) error
}

// Notifier's directive guards each of its methods that returns error
// last; Name and Logf are delegated.
//
//idem:ttl=10m
type Notifier interface {
	Notify(ctx context.Context, to, msg string) error
	// Reset reads the interface's ttl and adds an option of its own.
	//
	//idem:on_duplicate=raise
	Reset(ctx context.Context, id string) error
	Name() string
	Logf(format string, args ...any)
}
