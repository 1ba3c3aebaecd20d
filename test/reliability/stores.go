package reliability

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// BrokenStore is a deliberately wrong store wrapper for the harness's own
// test. With FlatFence it hides fencing: every owner is told fence 1, as a
// store without fences would (its writes still reach the real store with
// the real fence, so only the fence the function sees is wrong). Without
// it, it ignores lost leases. Its heartbeats always "succeed", and a
// completion rejected with idem.ErrLeaseLost is forced through by deleting
// the record and claiming it afresh, so a zombie owner overwrites its
// successor's result. A harness that cannot tell this store from a correct
// one proves nothing; the zombie scenario must report it.
type BrokenStore struct {
	idemstore.Store
	FlatFence bool

	mu     sync.Mutex
	fences map[idemstore.Token]uint64 // owner → real fence (FlatFence)
}

// Claim hides the real fence when FlatFence is set.
func (b *BrokenStore) Claim(ctx context.Context, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	res, err := b.Store.Claim(ctx, req)
	if err == nil && b.FlatFence && (res.Status == idemstore.ClaimAcquired || res.Status == idemstore.ClaimTakenOver) {
		b.mu.Lock()
		if b.fences == nil {
			b.fences = map[idemstore.Token]uint64{}
		}
		b.fences[req.Owner] = res.Fence
		b.mu.Unlock()
		res.Fence = 1
	}
	return res, err
}

// real restores the real fence of a lease handed out by a FlatFence Claim.
func (b *BrokenStore) real(l idemstore.Lease) idemstore.Lease {
	b.mu.Lock()
	defer b.mu.Unlock()
	if f, ok := b.fences[l.Owner]; ok {
		l.Fence = f
	}
	return l
}

// Release and Fail pass the real fence on.
func (b *BrokenStore) Release(ctx context.Context, l idemstore.Lease) error {
	return b.Store.Release(ctx, b.real(l))
}

// Fail passes the real fence on, as Release does.
func (b *BrokenStore) Fail(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	return b.Store.Fail(ctx, b.real(l), r)
}

// Heartbeat swallows every error, including idem.ErrLeaseLost.
func (b *BrokenStore) Heartbeat(ctx context.Context, l idemstore.Lease) error {
	err := b.Store.Heartbeat(ctx, b.real(l))
	if b.FlatFence {
		return err
	}
	return nil
}

// Complete re-claims the key when the real store says the lease was lost.
func (b *BrokenStore) Complete(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	l = b.real(l)
	err := b.Store.Complete(ctx, l, r)
	if b.FlatFence || !errors.Is(err, idem.ErrLeaseLost) {
		return err
	}
	rec, gerr := b.Store.Get(ctx, l.Key)
	if gerr != nil {
		return err
	}
	if derr := b.Store.Delete(ctx, l.Key); derr != nil {
		return err
	}
	res, cerr := b.Store.Claim(ctx, idemstore.ClaimRequest{Key: l.Key, Fingerprint: rec.Fingerprint, Owner: l.Owner, Lease: l.Duration, TTL: l.TTL})
	if cerr != nil || !(res.Status == idemstore.ClaimAcquired || res.Status == idemstore.ClaimTakenOver) {
		return err
	}
	l.Fence = res.Fence
	return b.Store.Complete(ctx, l, r)
}

// DelayStore delays every completion by a random time up to Max, calling
// Mark first, so that a worker can be killed between its function's return
// and the store's completion. It changes nothing else.
type DelayStore struct {
	idemstore.Store
	Max  time.Duration
	Mark func(phase, key string, fence uint64)
}

// Complete waits, then completes.
func (d DelayStore) Complete(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	if d.Mark != nil {
		d.Mark("completing", l.Key, l.Fence)
	}
	if d.Max > 0 {
		time.Sleep(rand.N(d.Max))
	}
	return d.Store.Complete(ctx, l, r)
}

// Classify names the class of a wrapper's error: the idem sentinels and
// context errors are "typed"; anything else is "untyped", which the
// network scenario counts as a violation (callers must be able to tell a
// store outage from a lost lease from a running duplicate).
func Classify(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, idem.ErrLeaseLost):
		return "lease_lost"
	case errors.Is(err, idem.ErrInProgress):
		return "in_progress"
	case errors.Is(err, idem.ErrStoreUnavailable):
		return "store_unavailable"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	case errors.Is(err, context.Canceled):
		return "canceled"
	default:
		return "untyped"
	}
}

// skewedClock returns a clock offset by off; with jump it is instead off by
// a different random amount (within ±|off|) at every reading.
func skewedClock(off time.Duration, jump bool) func() time.Time {
	if jump {
		span := max(off, -off)
		return func() time.Time {
			return time.Now().Add(time.Duration(rand.Int64N(int64(2*span+1))) - span)
		}
	}
	return func() time.Time { return time.Now().Add(off) }
}
