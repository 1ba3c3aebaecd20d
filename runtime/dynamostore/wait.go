package dynamostore

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Wait polls the item until it has no live in-progress lease that could
// not yet be taken over, backing off from pollMin to pollMax.
func (s *Store) Wait(ctx context.Context, key string) error {
	if err := s.checkKey(key); err != nil {
		return err
	}
	k := s.itemKey(key)
	interval := s.pollMin
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		item, err := s.getItem(ctx, "wait", key, k)
		if err != nil {
			return err
		}
		if item == nil {
			return nil
		}
		r, err := decode(key, item)
		if err != nil {
			return err
		}
		now := s.now()
		// The same rule as Claim's condition, so a woken waiter's claim
		// never finds the lease still standing.
		if r.State != idemstore.StateInProgress || s.takeoverable(&r, now) {
			return nil
		}
		// Sleep the interval with ±25% jitter (so waiters on one key do
		// not poll in step), but not past the takeover point.
		d := interval*3/4 + rand.N(interval/2+1)
		if until := r.LeaseUntil.Add(s.skew).Sub(now); until < d {
			d = max(until, time.Millisecond)
		}
		interval = min(interval*3/2, s.pollMax)
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
