package reliability

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
)

// BrokenStore is a deliberately wrong store wrapper for the harness's own
// test: it ignores lost leases. Its heartbeats always "succeed", and a
// completion rejected with idem.ErrLeaseLost is forced through by deleting
// the record and claiming it afresh, so a zombie owner overwrites its
// successor's result. A harness that cannot tell this store from a correct
// one proves nothing; the zombie scenario must report it.
type BrokenStore struct {
	idem.Store
}

// Heartbeat swallows every error, including idem.ErrLeaseLost.
func (b BrokenStore) Heartbeat(ctx context.Context, l idem.Lease) error {
	_ = b.Store.Heartbeat(ctx, l)
	return nil
}

// Complete re-claims the key when the real store says the lease was lost.
func (b BrokenStore) Complete(ctx context.Context, l idem.Lease, r idem.Result) error {
	err := b.Store.Complete(ctx, l, r)
	if !errors.Is(err, idem.ErrLeaseLost) {
		return err
	}
	rec, gerr := b.Store.Get(ctx, l.Key)
	if gerr != nil {
		return err
	}
	if derr := b.Store.Delete(ctx, l.Key); derr != nil {
		return err
	}
	res, cerr := b.Store.Claim(ctx, idem.ClaimRequest{Key: l.Key, Fingerprint: rec.Fingerprint, Owner: l.Owner, Lease: l.Duration, TTL: l.TTL})
	if cerr != nil || !res.Status.Owns() {
		return err
	}
	l.Fence = res.Fence
	return b.Store.Complete(ctx, l, r)
}

// DelayStore delays every completion by a random time up to Max, calling
// Mark first, so that a worker can be killed between its function's return
// and the store's completion. It changes nothing else.
type DelayStore struct {
	idem.Store
	Max  time.Duration
	Mark func(phase, key string, fence uint64)
}

// Complete waits, then completes.
func (d DelayStore) Complete(ctx context.Context, l idem.Lease, r idem.Result) error {
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

func must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprintf("reliability: %v", err))
	}
	return v
}
