package idem

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// heartbeat renews a lease every Duration/3 off the caller's path. It uses
// the Guard's alarms rather than a goroutine, so a short function never
// starts one; it lives inside its call's execution, so starting it
// allocates nothing.
type heartbeat struct {
	g *Guard
	// st is a copy of the call's state for the heartbeat's notes to the
	// observer; nil without one (notes are then no-ops), which keeps the
	// execution that holds the heartbeat small.
	st    *state
	lease *Lease     // the execution's
	ctx   *fnCtx     // fn's
	mu    sync.Mutex // serializes beats with stop
	// stopped is set by stop, lost when the store said the key has
	// another owner.
	stopped, lost atomic.Bool
	beat          alarm // the next beat
	// dead fires when the lease has run out, counted from when the last
	// successful heartbeat (or the claim) was sent (okSent), so the
	// function is stopped no later than the store can hand the key on.
	// It is set by the first beat, not at the start: the first beat is
	// due well before the lease ends, and most calls end before it, so
	// they schedule one alarm instead of two.
	dead    alarm
	okSent  time.Duration
	deadSet bool // under mu
	// settled is the execution's (execution.settle), kept here in what
	// would be padding: the execution stays in its allocation size class.
	settled bool
	// panicked: a beat panicked (the store's Heartbeat, an observer's
	// note). The panic is recovered in the alarm's goroutine, where it
	// would end the process, kept in beatPanics, and panicked again in
	// the caller's goroutine once fn returns.
	panicked atomic.Bool
}

// beatPanics holds the panics of beats, by *heartbeat, until their calls
// take them (execution.beatPanic): rare enough not to take a word of
// every execution.
var beatPanics sync.Map

// beatRing and deadRing are a heartbeat's two alarms: the same pointer,
// two ring methods.
type (
	beatRing heartbeat
	deadRing heartbeat
)

func (r *beatRing) ring() { (*heartbeat)(r).renew() }
func (r *deadRing) ring() { (*heartbeat)(r).expire() }

func (hb *heartbeat) start(g *Guard, ctx *fnCtx, lease *Lease, st *state) {
	hb.g, hb.ctx, hb.lease = g, ctx, lease
	if g.obs != nil {
		cp := *st
		hb.st = &cp
	}
	hb.okSent = st.claimSent
	hb.mu.Lock()
	// Counted from the claim, like the lease: no clock reading needed.
	g.alarms.set(&hb.beat, st.claimSent+hb.interval(), (*beatRing)(hb))
	hb.mu.Unlock()
}

func (hb *heartbeat) interval() time.Duration { return hb.lease.Duration / 3 }

func (hb *heartbeat) note(o Outcome, err error) {
	if hb.st != nil {
		hb.st.note(o, hb.lease.Fence, err)
	}
}

// recoverPanic is deferred by the beats: a panic stops the beats, ends
// fn's ctx, and is kept for the caller (execute).
func (hb *heartbeat) recoverPanic() {
	if p := recover(); p != nil {
		if _, had := beatPanics.LoadOrStore(hb, p); !had {
			hb.panicked.Store(true)
		}
		hb.ctx.cancel(fmt.Errorf("idem: the heartbeat panicked: %v", p))
	}
}

func (hb *heartbeat) expire() {
	defer hb.recoverPanic()
	if hb.stopped.Load() {
		return
	}
	err := fmt.Errorf("%w: no heartbeat succeeded within the %s lease", ErrLeaseLost, hb.lease.Duration)
	hb.note(OutcomeLeaseLost, err)
	hb.ctx.cancel(err)
}

func (hb *heartbeat) renew() {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	defer hb.recoverPanic() // under mu: stop returns after it is kept
	if hb.stopped.Load() {
		return
	}
	g, lease, interval := hb.g, *hb.lease, hb.interval()
	if !hb.deadSet {
		// The first beat: from now on a beat may hang on the store, and
		// the lease must still end on time.
		hb.deadSet = true
		g.alarms.set(&hb.dead, hb.okSent+lease.Duration, (*deadRing)(hb))
	}
	sent := time.Since(monoBase)
	hctx, hcancel := context.WithTimeout(context.WithoutCancel(hb.ctx), interval)
	err := g.store.Heartbeat(hctx, lease)
	hcancel()
	switch {
	case err == nil:
		hb.okSent = sent
		g.alarms.set(&hb.dead, sent+lease.Duration, (*deadRing)(hb))
	case errors.Is(err, ErrLeaseLost):
		hb.lost.Store(true)
		hb.note(OutcomeLeaseLost, err)
		hb.ctx.cancel(ErrLeaseLost)
		return
	default:
		// The dead alarm stops the function if this goes on for the rest
		// of the lease.
		hb.note(OutcomeHeartbeatFailed, err)
	}
	g.alarms.set(&hb.beat, time.Since(monoBase)+interval, (*beatRing)(hb))
}

// stop cancels future beats and waits for one in flight.
func (hb *heartbeat) stop() {
	hb.stopped.Store(true)
	hb.mu.Lock()
	if hb.deadSet {
		hb.g.alarms.stop(&hb.dead)
	}
	hb.g.alarms.stop(&hb.beat)
	hb.mu.Unlock()
}
