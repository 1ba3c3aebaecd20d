// Package recursive: recursive types (a tree, a linked list, mutual
// recursion) get key helpers that call each other.
package recursive

import (
	"context"
	"sync/atomic"
)

var runs atomic.Int64

type Tree struct {
	Value    string
	Children []*Tree
	Attrs    map[string]*Tree
}

type List struct {
	Head int
	Tail *List
}

type A struct{ B *B }
type B struct {
	A  *A
	ID int
}

// Walk visits a tree.
//
//idem:on_duplicate=return
func Walk(ctx context.Context, t *Tree, l List, a A) (int64, error) {
	return runs.Add(1), nil
}
