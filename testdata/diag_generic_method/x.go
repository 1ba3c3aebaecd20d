package p

import "context"

type Box[T any] struct{ v T }

// Get is a method of a generic type.
//
//idem:ttl=1h
func (b *Box[T]) Get(ctx context.Context) (T, error) { return b.v, nil }
