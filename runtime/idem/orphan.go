package idem

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
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
	n  atomic.Int32 // len(m), read without the lock on every claim
	mu sync.Mutex
	m  map[string]orphan
}

type orphan struct {
	owner idemstore.Token
	lease idemstore.Lease // Key, Owner, Duration and TTL; the fence is read back
}

// maxOrphans bounds the remembered tokens and their goroutines. Past it a
// lost claim is left to expire with its lease, as it would without this.
const maxOrphans = 1024

// adopt remembers req's claim if its error leaves open whether the store
// applied it, and starts the background search for it.
func (o *orphans) adopt(ctx context.Context, g *Guard, req idemstore.ClaimRequest, err error) {
	if errors.Is(err, ErrCorruptRecord) || errors.Is(err, ErrInvalidKey) || errors.Is(err, ErrStoreFull) || errors.Is(err, ErrResultTooLarge) {
		return // the store answered: nothing was claimed
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		// Refused at the dial: nothing was sent. Searching would only add
		// a look-up per failed call to an outage.
		return
	}
	l := idemstore.Lease{Key: req.Key, Owner: req.Owner, Duration: req.Lease, TTL: req.TTL}
	o.mu.Lock()
	if o.m == nil {
		o.m = make(map[string]orphan)
	}
	if len(o.m) >= maxOrphans {
		o.mu.Unlock()
		return
	}
	o.m[req.Key] = orphan{owner: req.Owner, lease: l}
	o.n.Store(int32(len(o.m)))
	o.mu.Unlock()
	go o.search(context.WithoutCancel(ctx), g, l)
}

// search looks for the orphaned claim until it is released, the record
// has moved on (another owner, another state), or the lease is over (at
// least writeTimeoutFloor). Not finding the record settles nothing: the
// claim's request may still be in flight (a slow link delivers it after
// the caller gave up), so the search goes on with backoff up to a second.
//
// A panic in the store here has no caller to reach, and would end the
// process: the search stops and leaves the claim remembered, for the
// next claim of its key to give back on its caller's goroutine (settle).
func (o *orphans) search(ctx context.Context, g *Guard, l idemstore.Lease) {
	ctx, cancel := context.WithTimeout(ctx, max(l.Duration, writeTimeoutFloor))
	defer cancel()
	defer func() {
		if recover() == nil {
			o.forget(l.Key, l.Owner)
		}
	}()
	delay := 10 * time.Millisecond
	for {
		if settled, _ := o.giveBack(ctx, g, l); settled {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// giveBack releases l's claim if l.Owner still holds the key. settled
// reports that there is nothing more to do: released, or the record has
// another owner with a fence that rules ours out, or has finished; err,
// that the store could not be asked.
func (o *orphans) giveBack(ctx context.Context, g *Guard, l idemstore.Lease) (settled bool, err error) {
	rec, err := g.store.Get(ctx, l.Key)
	switch {
	case errors.Is(err, ErrNotFound):
		return false, nil // not there (yet): the claim may still land
	case err != nil:
		return false, err
	case rec.Owner != l.Owner:
		// Another owner holds or finished the key. Our claim may still
		// be in flight, but it can only land on a record the store would
		// let it take (released, or an expired lease), so keep looking
		// only while the record could still be taken.
		return rec.State == idemstore.StateCompleted || rec.State == idemstore.StateFailed, nil
	case rec.State == idemstore.StateInProgress:
		l.Fence = rec.Fence
		if rerr := g.store.Release(ctx, l); rerr != nil && !errors.Is(rerr, ErrLeaseLost) {
			return false, rerr
		}
	}
	o.forget(l.Key, l.Owner)
	return true, nil
}

func (o *orphans) forget(key string, owner idemstore.Token) {
	o.mu.Lock()
	if v, ok := o.m[key]; ok && v.owner == owner {
		delete(o.m, key)
		o.n.Store(int32(len(o.m)))
	}
	o.mu.Unlock()
}

// settle runs before a claim of key: if this process orphaned a claim of
// it, that claim is given back first, so the caller's retry does not race
// the background search. It costs one atomic load when there is none.
func (o *orphans) settle(ctx context.Context, g *Guard, key string) {
	if o.n.Load() == 0 {
		return
	}
	o.mu.Lock()
	v, ok := o.m[key]
	o.mu.Unlock()
	if ok {
		_, _ = o.giveBack(ctx, g, v.lease)
	}
}

// reclaim is the synchronous check for a claim of key that found it in
// progress: if the owner is a token this process orphaned, it is given
// back (here, or just now by the background search) and reclaim reports
// true: claim again. Do calls it at most once per call.
func (o *orphans) reclaim(ctx context.Context, g *Guard, key string) bool {
	o.mu.Lock()
	v, ok := o.m[key]
	o.mu.Unlock()
	if !ok {
		return false
	}
	rec, err := g.store.Get(ctx, key)
	switch {
	case errors.Is(err, ErrNotFound):
		return true // gone since the claim answered: claim again
	case err != nil || rec.Owner != v.owner:
		return false
	case rec.State != idemstore.StateInProgress:
		return true // the search released it meanwhile
	}
	settled, err := o.giveBack(ctx, g, v.lease)
	return settled && err == nil
}
