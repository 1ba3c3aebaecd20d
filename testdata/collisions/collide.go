// Package collisions: the package declares names the generated file would
// use (idem, context, time, idemSpecPay), and parameters are called g, c,
// x, r, err, ctx (not a context), time and idem: imports get aliases,
// locals and the receiver get other names. Method receivers keep their
// source names: c (the call's local becomes c2), context (a package-level
// type: renamed context_) and idem3 (the runtime's import steps aside).
package collisions

import (
	ctxpkg "context"
	"sync/atomic"
	stdtime "time"
)

// idem, context and time are package-level names here.
var idem = "not the runtime"

type context struct{ deadline stdtime.Time }

func time() int { return 0 }

var idemSpecPay = 1 // as if hand-written

var runs atomic.Int64

// Pay uses the names of the wrapper's locals as parameters.
//
//idem:on_duplicate=return
func Pay(ctx2 ctxpkg.Context, g string, c int, x bool, r []string, err string, ctx int) (int64, error) {
	return runs.Add(1), nil
}

// Tick has parameters named like the imports of the generated file.
//
//idem:key=idem2 ttl=90m
func Tick(ctx ctxpkg.Context, idem2 string, time2 int, context2 context, b []byte) (string, int, error) {
	runs.Add(1)
	return idem2, time2, nil
}

// Box's methods have receivers named like generated identifiers.
type Box struct{ n atomic.Int64 }

// Put's receiver is named like the wrapper's call variable.
//
//idem:ttl=1h
func (c *Box) Put(ctx ctxpkg.Context, x int) (int64, error) {
	runs.Add(1)
	return c.n.Add(int64(x)), nil
}

// Peek's receiver is named like the package-level type context.
//
//idem:ttl=1h
func (context *Box) Peek(ctx ctxpkg.Context) (int64, error) {
	return context.n.Load(), nil
}

// Empty's receiver is named like the alias the runtime's import would get.
//
//idem:ttl=1h
func (idem3 *Box) Empty(ctx ctxpkg.Context) error {
	idem3.n.Store(0)
	return nil
}
