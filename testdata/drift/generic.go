package drift

import "context"

// Opt is keyed field by field, per instance: Opt[int64] has a drift
// check of its own.
type Opt[T comparable] struct {
	Value T
	Set   bool
}

// Page is read with a type parameter of the function (Page[S] in Save):
// its drift check sits in a generic function.
type Page[T any] struct {
	Items []T
}

// Track keys an instance of a generic type.
//
//idem:ttl=1h
func Track(ctx context.Context, limit Opt[int64]) (int64, error) {
	return runs.Add(1), nil
}

// Save keys an instance that mentions its type parameter.
//
//idem:ttl=1h
func Save[S ~string](ctx context.Context, p Page[S]) (int64, error) {
	return runs.Add(1), nil
}
