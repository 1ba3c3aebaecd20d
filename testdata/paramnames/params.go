// Package paramnames: unnamed and blank parameters, parameters named like
// the function, like a package-level type, or like predeclared
// identifiers (len, string, int64), and a context that is not first.
package paramnames

import (
	"context"
	"sync/atomic"
)

var runs atomic.Int64

type Item struct{ ID string }

// Store has unnamed parameters.
//
//idem:on_duplicate=return
func Store(context.Context, string, int) error {
	runs.Add(1)
	return nil
}

// Blank has blank parameters.
//
//idem:on_duplicate=return
func Blank(_ context.Context, _ string, n int) (int, error) {
	runs.Add(1)
	return n, nil
}

// Shadow names parameters after things the wrapper must refer to.
//
//idem:on_duplicate=return
func Shadow(Shadow string, Item Item, len int, string string, int64 []int) (*Item, error) {
	runs.Add(1)
	return &Item, nil
}

// Later takes its context second.
//
//idem:key=id
func Later(id string, ctx context.Context, n int) (int, error) {
	runs.Add(1)
	return n, ctx.Err()
}
