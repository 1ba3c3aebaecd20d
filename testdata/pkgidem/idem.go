// Package idem is named like the runtime: the generated file imports the
// runtime as idem all the same (a package's own name is not in its
// scope). It also uses type aliases and instances of generic types.
package idem

import (
	"context"
	"sync/atomic"
)

var runs atomic.Int64

type Pair[K comparable, V any] struct {
	Key K
	Val V
}

// ID is an alias: keyed as what it stands for.
type ID = string

type Input struct {
	Who  ID
	Pair Pair[string, int] `idem:"-"`
}

// Guard is a local type named like the runtime's.
type Guard struct{}

// Lookup returns an instance of a generic type.
//
//idem:on_duplicate=wait
func Lookup(ctx context.Context, in Input, who ID) (Pair[string, int], error) {
	runs.Add(1)
	return Pair[string, int]{Key: who, Val: len(who)}, nil
}

// Check is a method of the local Guard type.
//
//idem:ttl=1m
func (g *Guard) Check(ctx context.Context, ids []ID) ([]Pair[ID, bool], error) {
	runs.Add(1)
	out := make([]Pair[ID, bool], len(ids))
	for i, id := range ids {
		out[i] = Pair[ID, bool]{id, true}
	}
	return out, nil
}
