// Package ship has an interface with an annotated method; idemvet_test
// generates its decorator at run time.
package ship

import "context"

// Carrier is what callers depend on.
type Carrier interface {
	//idem:ttl=1h
	Book(ctx context.Context, order string) (string, error) // want Book:"annotated\\(IdempotentCarrier, interface\\)"
	Track(ref string) (string, error)
}

// Fleet embeds Carrier: its Book is Carrier's.
type Fleet interface {
	Carrier
	Size() int
}

func sameFile(ctx context.Context, c Carrier, d *IdempotentCarrier) error {
	_, err := c.Book(ctx, "o1") // want `a call of Carrier\.Book through c bypasses the decorator d in scope \(IdempotentCarrier\.Book\)`
	return err
}
