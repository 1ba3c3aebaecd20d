package idem

import (
	"context"
	"sync/atomic"
)

type leaseKey struct{}

// runCtx is fn's ctx: the standard library's cancel ctx, which does all
// of the canceling, with the call's running value added. It is
// context.WithValue's valueCtx kept inside the call's execution, which
// spares a first execution an allocation of 48 B and 27 ns
// (BenchmarkRunCtx); children attach to the cancel
// ctx directly (its Value answers the standard library's lookup of it),
// so they cost no goroutine.
type runCtx struct {
	context.Context
	run *running
}

func (c *runCtx) Value(key any) any {
	if key == (leaseKey{}) {
		return c.run
	}
	return c.Context.Value(key)
}

// running is what a guarded call's ctx carries.
type running struct {
	lease  Lease
	codec  recordCodec
	cancel context.CancelCauseFunc // fn's ctx's: a step that finds the lease lost cancels it
	// steps is made by the call's first step, or at the start for a
	// resumed call whose record held steps: most calls have none.
	steps atomic.Pointer[steps]
}

// LeaseFrom returns the lease of the guarded call running with ctx, and
// the codec the Guard records its result with, so a store that completes
// a record itself (pgstore's transactional completion) writes exactly
// the bytes the Guard would: the function's identity header, then the
// result's encoding.
func LeaseFrom(ctx context.Context) (Lease, Codec, bool) {
	r, ok := ctx.Value(leaseKey{}).(*running)
	if !ok {
		return Lease{}, nil, false
	}
	return r.lease, &r.codec, true
}

// FenceFrom returns the fence of the guarded call running with ctx. Fences
// strictly increase on every takeover of a key: guard a business write with
// it (for example "UPDATE … WHERE last_fence < $fence") so that an owner
// that lost its lease cannot overwrite its successor's work.
func FenceFrom(ctx context.Context) (uint64, bool) {
	r, ok := ctx.Value(leaseKey{}).(*running)
	if !ok {
		return 0, false
	}
	return r.lease.Fence, true
}
