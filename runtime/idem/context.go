package idem

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

type leaseKey struct{}

// fnCtx is fn's ctx: the caller's ctx with the call's running value,
// made cancelable when something first needs it to be. The canceling is
// the standard library's cancel ctx; fnCtx only defers making it until
// fn asks for Done, a child attaches (which asks for Done), or the lease
// is lost. Most functions do neither, so their first execution skips the
// cancel ctx's two allocations, its registration with the parent and its
// cancel after fn returns (docs/BENCHMARKS.md, "What each speed mechanism
// earns"). Once fn has returned, fnCtx answers as a canceled ctx, like the one it stands
// for.
type fnCtx struct {
	parent context.Context
	run    *running
	mu     sync.Mutex // serializes making the cancel ctx
	made   atomic.Pointer[cancelCtx]
	ended  atomic.Bool
}

type cancelCtx struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// cancelable returns the cancel ctx, made on first need, nil while it
// was never needed and fn runs.
func (c *fnCtx) cancelable(need bool) *cancelCtx {
	if k := c.made.Load(); k != nil || (!need && !c.ended.Load()) {
		return k
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if k := c.made.Load(); k != nil {
		return k
	}
	ctx, cancel := context.WithCancelCause(c.parent)
	k := &cancelCtx{ctx: ctx, cancel: cancel}
	c.made.Store(k)
	if c.ended.Load() {
		cancel(nil) // made by a goroutine fn left running
	}
	return k
}

func (c *fnCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }

func (c *fnCtx) Done() <-chan struct{} { return c.cancelable(true).ctx.Done() }

func (c *fnCtx) Err() error {
	if k := c.cancelable(false); k != nil {
		return k.ctx.Err()
	}
	return c.parent.Err()
}

// Value answers the standard library's lookup of a cancel ctx (by
// children and context.Cause) from the one made, so children attach to it
// directly and cost no goroutine.
func (c *fnCtx) Value(key any) any {
	if key == (leaseKey{}) {
		return c.run
	}
	if k := c.cancelable(false); k != nil {
		return k.ctx.Value(key)
	}
	return c.parent.Value(key)
}

// cancel cancels fn's ctx with cause (a lost lease).
func (c *fnCtx) cancel(cause error) { c.cancelable(true).cancel(cause) }

// end is called once fn has returned: fn's ctx is canceled from then on.
// Either end sees the cancel ctx made, or its maker sees ended; both may,
// and canceling twice is harmless.
func (c *fnCtx) end() {
	c.ended.Store(true)
	if k := c.made.Load(); k != nil {
		k.cancel(nil)
	}
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
