package p

import "context"

// Map is generic.
//
//idem:ttl=1h
func Map[T any](ctx context.Context, v T) (T, error) { return v, nil }
