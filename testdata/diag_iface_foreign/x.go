// Package p has interface decorators beside wrapped functions of another
// package: what one feature's rules say of the other's.
package p

import (
	"context"

	"github.com/idemgen/idemgen/testdata/diag_iface_foreign/sdk"
)

// Carrier is decorated by IdempotentCarrier.
type Carrier interface {
	//idem:ttl=1h
	Book(ctx context.Context, id string) error
}

// A var directive naming the package's own interface method: annotate it
// inside the interface.
//
//idem:ttl=1h
var _ = Carrier.Book

// sdk.Carrier's wrapper type would be IdempotentCarrier, the decorator's.
//
//idem:ttl=1h
var _ = (*sdk.Carrier).Book

// Shipper's directive cannot rename its methods.
//
//idem:ttl=1h as=Ship
type Shipper interface {
	Send(ctx context.Context, id string) error
}

// Tracker's method cannot be renamed either.
type Tracker interface {
	//idem:ttl=1h as=Follow
	Track(ctx context.Context, id string) error
}

// T is a type, not a function nor an interface.
//
//idem:ttl=1h
type T struct{}
