// Package shipapp calls package ship's annotated interface method.
package shipapp

import (
	"context"

	"example.com/vt/ship"
	"github.com/idemgen/idemgen/runtime/idem"
)

// Bypass has a decorator at hand and calls the inner Carrier.
func Bypass(ctx context.Context, inner ship.Carrier, g *idem.Guard) error {
	d := ship.NewIdempotentCarrier(inner, g)
	if _, err := d.Book(ctx, "o1"); err != nil {
		return err
	}
	_, err := inner.Book(ctx, "o2") // want `a call of ship\.Carrier\.Book through inner bypasses the decorator d in scope \(IdempotentCarrier\.Book\); call d\.Book`
	return err
}

// ThroughEmbedding calls Book through an interface that embeds Carrier.
func ThroughEmbedding(ctx context.Context, f ship.Fleet, d *ship.IdempotentCarrier) error {
	_, err := f.Book(ctx, "o3") // want `a call of ship\.Carrier\.Book through f bypasses the decorator d`
	return err
}

// DropIn holds whatever Carrier it was given, a decorator maybe: with
// no decorator in scope, a call through the interface is not reported.
func DropIn(ctx context.Context, c ship.Carrier) error {
	_, err := c.Book(ctx, "o4")
	return err
}

// Unannotated methods are the inner Carrier's anyway.
func Unannotated(inner ship.Carrier, d *ship.IdempotentCarrier) (string, error) {
	return inner.Track("r1")
}

// Escaped says why it skips the decorator.
func Escaped(ctx context.Context, inner ship.Carrier, d *ship.IdempotentCarrier) error {
	_, err := inner.Book(ctx, "o5") //idem:direct the carrier's own retry keys this call
	return err
}

// Fresh gives the decorator a fresh context.
func Fresh(ctx context.Context, d *ship.IdempotentCarrier) error {
	_, err := d.Book(context.Background(), "o6") // want `wrapper Book called with context\.Background\(\) although ctx`
	return err
}

// fedex is a Carrier.
type fedex struct{}

func (*fedex) Book(ctx context.Context, order string) (string, error) { return "f-" + order, nil }
func (*fedex) Track(ref string) (string, error)                       { return ref, nil }

// Concrete calls the implementation's Book with the decorator at hand.
func Concrete(ctx context.Context, f *fedex, g *idem.Guard) error {
	d := ship.NewIdempotentCarrier(f, g)
	_, _ = f.Track("r1") // not annotated
	if _, err := d.Book(ctx, "o7"); err != nil {
		return err
	}
	_, err := f.Book(ctx, "o8") // want `a direct call of \*fedex\.Book bypasses the decorator d in scope \(IdempotentCarrier\.Book\): \*fedex implements ship\.Carrier, whose Book is annotated`
	return err
}

// ConcreteAlone has no decorator in scope: not reported.
func ConcreteAlone(ctx context.Context, f *fedex) error {
	_, err := f.Book(ctx, "o9")
	return err
}
