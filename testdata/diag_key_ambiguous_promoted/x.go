// Package x: a promoted field name found in two embedded structs at the
// same depth is an ambiguous selector; a key, exclude or omit path naming it
// is reported, with the paths that name one of them.
package x

import "context"

type Billing struct{ Region string }

type Shipping struct{ Region string }

type Order struct {
	Billing
	*Shipping
	ID string
}

// Deeper fields lose to shallower ones: Outer.Region is Outer's own.
type Outer struct {
	Order
	Region string
}

type Out struct {
	Billing
	Shipping
}

//idem:key=o.Region,o.ID
func Place(ctx context.Context, o Order) error { return nil }

//idem:exclude=o.Region
func Ship(ctx context.Context, o *Order) error { return nil }

//idem:key=o.Region,o.Order.ID
func Fine(ctx context.Context, o Outer) error { return nil }

//idem:key=o.Billing.Region,o.Shipping.Region
func Explicit(ctx context.Context, o Order) error { return nil }

//idem:key=id omit=r1.Region
func Read(ctx context.Context, id string) (Out, error) { return Out{}, nil }
