package p

import "context"

// Map is generic: its value cannot be keyed (any) and its result cannot
// be stored (a type parameter).
//
//idem:ttl=1h
func Map[T any](ctx context.Context, v T) (T, error) { return v, nil }

// Mixed has a constraint of two kinds: no one conversion keys both.
//
//idem:ttl=1h
func Mixed[N ~int | ~string](ctx context.Context, n N) error { return nil }

type Named interface{ Name() string }

// Field names a path through a type parameter, which has no fields.
//
//idem:key=e.ID
func Field[E Named](ctx context.Context, e E) error { return nil }

type Page[T any] struct{ Items []T }

// List returns a page of its type parameter.
//
//idem:ttl=1h
func List[T comparable](ctx context.Context, id string) (Page[T], error) { return Page[T]{}, nil }

// IdempotentTaken is a name the generic wrapper of Taken needs.
func IdempotentTaken() {}

// Taken is a generic function whose wrapper's name is taken.
//
//idem:ttl=1h
func Taken[S ~string](ctx context.Context, s S) error { return nil }
