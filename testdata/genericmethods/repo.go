// Package genericmethods wraps the methods of a generic type: the wrapper
// type is generic too, and the type argument is part of the key.
package genericmethods

import (
	"context"
	"sync"

	"github.com/idemgen/idemgen/runtime/idem"
)

// Entity is what a Repo stores: it keys itself.
type Entity interface {
	idem.Keyer
	comparable
}

// Repo stores entities of one type.
type Repo[T Entity] struct {
	Table string
	mu    sync.Mutex
	saved []T
}

// Save stores v once.
//
//idem:ttl=1h
func (r *Repo[T]) Save(ctx context.Context, v T) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.saved = append(r.saved, v)
	return len(r.saved), nil
}

// Rename renames the entity with the given ID in this table once: the
// receiver's table is part of the key (key=r.Table), under a receiver
// type parameter named differently from the type's own.
//
//idem:key=r.Table,id
func (r *Repo[U]) Rename(ctx context.Context, id string, to string) error {
	return nil
}

// Saved is not annotated: the wrapper promotes it.
func (r *Repo[T]) Saved() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]T(nil), r.saved...)
}

// User and Team key on their ID.
type User struct{ ID string }

func (u User) IdemKey() any { return u.ID }

type Team struct{ ID string }

func (t Team) IdemKey() any { return t.ID }
