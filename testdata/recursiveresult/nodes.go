// Package recursiveresult: results of a recursive type. Their generated
// codec bounds how deeply values nest (idemimpl.MaxDepth): a cyclic result is
// not encodable, so the call reports it after running and duplicates get
// the recorded failure, where encoding it used to overflow the stack and
// kill the process after the function had run.
package recursiveresult

import (
	"context"
	"sync/atomic"
)

var runs atomic.Int64

type Node struct {
	ID       int
	Children []*Node
	Next     *Node
}

// Chain returns n nodes linked by Next; ring closes the chain on itself,
// and fan makes every node list the head twice among its children (a
// cycle reachable by 2^n paths).
//
//idem:on_duplicate=wait
func Chain(ctx context.Context, n int, ring, fan bool) (*Node, error) {
	runs.Add(1)
	head := &Node{ID: 0}
	last := head
	for i := 1; i < n; i++ {
		last.Next = &Node{ID: i}
		last = last.Next
	}
	if ring {
		last.Next = head
	}
	if fan {
		for x := head; x != nil; x = x.Next {
			x.Children = []*Node{head, head}
			if x.Next == head {
				break
			}
		}
	}
	return head, nil
}
