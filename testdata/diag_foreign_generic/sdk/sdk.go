// Package sdk has generic functions and a generic type whose methods the
// case tries to wrap from another package.
package sdk

import "context"

// Map is a generic function.
func Map[T any](ctx context.Context, v T) (T, error) { return v, nil }

// Pair is a generic function of two type parameters.
func Pair[K comparable, V any](ctx context.Context, k K, v V) error { return nil }

// Box is a generic type.
type Box[T any] struct{ V T }

// Put stores v.
func (b *Box[T]) Put(ctx context.Context, v T) error { b.V = v; return nil }

// Get has a value receiver.
func (b Box[T]) Get(ctx context.Context) (T, error) { return b.V, nil }

// Store has methods wrapped from p, whose wrapper type IdempotentStore
// is the name the wrapper of p's generic function Store needs.
type Store struct{}

// Save saves.
func (s *Store) Save(ctx context.Context, key string) error { return nil }
