package idemtest

import (
	"context"
	"time"
)

// DueCtx returns parent with deadline at, but no timer behind it: a ctx
// at the instant a client's socket deadline fires, when its deadline is
// due by the clock while its Err is still nil and its Done (parent's)
// still open. Tests of how a store's or the Guard's errors are read at a
// caller's deadline (idemimpl.CtxErr) use it.
func DueCtx(parent context.Context, at time.Time) context.Context {
	return dueCtx{Context: parent, deadline: at}
}

type dueCtx struct {
	context.Context
	deadline time.Time
}

func (c dueCtx) Deadline() (time.Time, bool) { return c.deadline, true }
