package idem

import (
	"context"
	"errors"
	"sync"
	"time"
)

// A claim whose reply never arrived (the caller's ctx ended first, the
// connection was cut) may still have been applied by the store: the key is
// then held by an owner token nobody runs under, and every caller would get
// ErrInProgress until the lease ran out. The Guard remembers such tokens
// (orphans) and gives the claim back:
//
//   - on the way out, off the caller's path: a bounded goroutine looks the
//     record up and releases it if the orphaned token owns it;
//   - on this process's next claim of the key that finds it in progress:
//     the same look-up, synchronously, before answering ErrInProgress.
//
// Release is fenced on owner and fence, so giving back a claim can never
// release another caller's: a look-up that finds another owner does nothing.
type orphans struct {
	mu sync.Mutex
	m  map[string]orphan
}

type orphan struct {
	owner Token
	lease Lease // Key, Owner, Duration and TTL; the fence is read back
	until time.Time
}

// maxOrphans bounds the remembered tokens and their goroutines. Past it a
// lost claim is left to expire with its lease, as it would without this.
const maxOrphans = 1024

// orphanMisses is how many look-ups that do not find the orphaned claim end
// the background search: the claim may land after the first look-up (its
// request still in flight), so one miss is not proof.
const orphanMisses = 3

// adopt remembers req's claim if its error leaves open whether the store
// applied it, and starts the background search for it.
func (o *orphans) adopt(ctx context.Context, g *Guard, req ClaimRequest, err error) {
	if errors.Is(err, ErrCorruptRecord) || errors.Is(err, ErrStoreFull) || errors.Is(err, ErrResultTooLarge) {
		return // the store answered: nothing was claimed
	}
	l := Lease{Key: req.Key, Owner: req.Owner, Duration: req.Lease, TTL: req.TTL}
	now := time.Now()
	o.mu.Lock()
	if o.m == nil {
		o.m = make(map[string]orphan)
	}
	for k, v := range o.m {
		if now.After(v.until) {
			delete(o.m, k)
		}
	}
	if len(o.m) >= maxOrphans {
		o.mu.Unlock()
		return
	}
	o.m[req.Key] = orphan{owner: req.Owner, lease: l, until: now.Add(req.Lease)}
	o.mu.Unlock()
	go o.search(context.WithoutCancel(ctx), g, l)
}

// search looks for the orphaned claim until it is released, seen missing
// orphanMisses times, or the lease (at least writeTimeoutFloor) is over.
func (o *orphans) search(ctx context.Context, g *Guard, l Lease) {
	ctx, cancel := context.WithTimeout(ctx, max(l.Duration, writeTimeoutFloor))
	defer cancel()
	delay, misses := 20*time.Millisecond, 0
	for {
		found, err := o.giveBack(ctx, g, l)
		if found {
			return
		}
		if err == nil {
			misses++
			if misses >= orphanMisses {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// giveBack releases l's claim if l.Owner still holds key. found reports
// that the question is settled (released, or the record has moved on to
// another owner or state); err, that the store could not be asked.
func (o *orphans) giveBack(ctx context.Context, g *Guard, l Lease) (found bool, err error) {
	rec, err := g.store.Get(ctx, l.Key)
	switch {
	case errors.Is(err, ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	case rec.Owner != l.Owner:
		return false, nil // not (yet) there: another owner, or our claim is still in flight
	case rec.State == StateInProgress:
		l.Fence = rec.Fence
		if rerr := g.store.Release(ctx, l); rerr != nil && !errors.Is(rerr, ErrLeaseLost) {
			return false, rerr
		}
	}
	o.forget(l.Key, l.Owner)
	return true, nil
}

func (o *orphans) forget(key string, owner Token) {
	o.mu.Lock()
	if v, ok := o.m[key]; ok && v.owner == owner {
		delete(o.m, key)
	}
	o.mu.Unlock()
}

// reclaim is the synchronous check for a claim of key that found it in
// progress: if the owner is a token this process orphaned, it is given
// back and reclaim reports true (claim again).
func (o *orphans) reclaim(ctx context.Context, g *Guard, key string) bool {
	o.mu.Lock()
	v, ok := o.m[key]
	o.mu.Unlock()
	if !ok {
		return false
	}
	found, err := o.giveBack(ctx, g, v.lease)
	return found && err == nil
}
