// Package p returns a recursive type with a func field: an omit= of the
// field would meet it again one level deeper (r1.Next.Visit), so the
// advice names the recursive value.
package p

import "context"

type Node struct {
	Name  string
	Visit func()
	Next  *Node
}

// Walk returns a list.
//
//idem:ttl=1h
func Walk(ctx context.Context, name string) (*Node, error) { return nil, nil }
