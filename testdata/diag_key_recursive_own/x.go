// Package p keys a parameter holding a recursive type of its own with a
// channel field: exclude=in.Tree.C would meet the channel again at
// in.Tree.Next.C, so the advice names the recursive value.
package p

import "context"

type Node struct {
	Name string
	C    chan int
	Next *Node
}

type In struct {
	ID   string
	Tree *Node
}

// F walks a tree once per input.
//
//idem:ttl=1h
func F(ctx context.Context, in In) (string, error) { return "", nil }
