// Package genericfuncparam wraps generic functions whose type parameter
// appears only inside a func parameter (a cloud SDK's
// ForEachAppSpecComponent[T any](s *AppSpec, fn func(component T) error)):
// the func is no part of the key, the type argument is.
package genericfuncparam

import (
	"context"
	"sync/atomic"
)

var runs atomic.Int64

type AppSpec struct{ Name string }

type ServiceSpec struct{ Name string }

type WorkerSpec struct{ Name string }

// ForEach calls fn for each component of type T.
//
//idem:ttl=24h
func ForEach[T any](s *AppSpec, fn func(component T) error) error {
	runs.Add(1)
	return nil
}

// Only has no other parameter.
//
//idem:ttl=24h
func Only[T any](fn func(T) error) error { return nil }

// Variadic takes the funcs as functional options.
//
//idem:ttl=24h
func Variadic[T any](s *AppSpec, fns ...func(T) error) error { return nil }

// Produce has T in the func's result.
//
//idem:ttl=24h
func Produce[T any](ctx context.Context, fn func() T) error { return nil }

type Repo[T any] struct{ items []T }

// Each is a method of a generic type.
//
//idem:ttl=24h
func (r *Repo[T]) Each(ctx context.Context, fn func(T) error) error { return nil }
