package idem

import (
	"context"
	"sync/atomic"
)

type leaseKey struct{}

// fnCtx is fn's ctx: the caller's ctx with the call's running value,
// canceled with a cause when the lease is lost, and once fn has returned.
type fnCtx struct {
	ctx   context.Context
	stop  context.CancelCauseFunc
	ended atomic.Bool
}

func (c *fnCtx) init(parent context.Context, run *running) {
	c.ctx, c.stop = context.WithCancelCause(context.WithValue(parent, leaseKey{}, run))
}

// cancel cancels fn's ctx with cause (a lost lease).
func (c *fnCtx) cancel(cause error) { c.stop(cause) }

// end is called once fn has returned: fn's ctx is canceled from then on.
func (c *fnCtx) end() {
	c.ended.Store(true)
	c.stop(nil)
}

// running is what a guarded call's ctx carries.
type running struct {
	lease Lease
	codec recordCodec
	ctx   *fnCtx // a step that finds the lease lost cancels it
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
