// Package nameclash: generated names that would collide get suffixes: a
// free function ServiceCharge next to the method Service.Charge, a method
// named g (the wrapper's usual guard field), and key helpers for a local
// type and an imported type both called Point.
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
