// Package nameclash: generated names that would collide get suffixes: a
// free function ServiceCharge next to the method Service.Charge, a method
// named g (the wrapper's usual guard field), key helpers for a local
// type and an imported type both called Point, and Key helpers whose
// usual name is taken: Service has its own ChargeKey (the wrapper's
// ChargeKey would shadow it), and the annotated Cancel sits next to an
// annotated CancelKey (a wrapper of its own).
package nameclash

import (
	"context"
	"image"
	"sync/atomic"
)

var runs atomic.Int64

type Service struct{}

type Point struct{ X, Y, Z int }

// ServiceCharge is a free function.
//
//idem:ttl=1h
func ServiceCharge(ctx context.Context, p Point) error {
	runs.Add(1)
	return nil
}

// Charge is a method whose spec would be named like ServiceCharge's.
//
//idem:ttl=1h
func (s *Service) Charge(ctx context.Context, p image.Point) error {
	runs.Add(1)
	return nil
}

// g is a method named like the guard field.
//
//idem:ttl=1h
func (s *Service) g(ctx context.Context, n int) (int, error) {
	runs.Add(1)
	return n, nil
}

// ChargeKey is Service's own method: IdempotentService promotes it, so
// the Key helper of Charge is named ChargeIdemKey.
func (s *Service) ChargeKey() string { return "service's own" }

// Cancel's Key helper cannot be CancelKey: that is the next wrapper.
//
//idem:ttl=1h
func Cancel(ctx context.Context, id string) error {
	runs.Add(1)
	return nil
}

// CancelKey is annotated too; its own Key helper is CancelKeyKey.
//
//idem:ttl=1h
func CancelKey(ctx context.Context, id string) error {
	runs.Add(1)
	return nil
}
