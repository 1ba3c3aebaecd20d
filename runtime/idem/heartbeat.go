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
	st     *state
	lease  *Lease          // the execution's
	rctx   context.Context // fn's ctx
	cancel context.CancelCauseFunc
	mu     sync.Mutex // serializes beats with stop
	// stopped is set by stop, lost when the store said the key has
	// another owner.
	stopped, lost atomic.Bool
	beat          alarm // the next beat
	// dead fires when the lease has run out, counted from when the last
	// successful heartbeat (or the claim) was sent, so the function is
	// stopped no later than the store can hand the key on.
	dead alarm
}

// beatRing and deadRing are a heartbeat's two alarms: the same pointer,
// two ring methods.
type (
	beatRing heartbeat
	deadRing heartbeat
)

func (r *beatRing) ring() { (*heartbeat)(r).renew() }
func (r *deadRing) ring() { (*heartbeat)(r).expire() }

func (hb *heartbeat) start(g *Guard, rctx context.Context, cancel context.CancelCauseFunc, lease *Lease, st *state) {
	hb.g, hb.rctx, hb.cancel, hb.lease = g, rctx, cancel, lease
	if g.obs != nil {
		cp := *st
		hb.st = &cp
	}
	g.alarms.set(&hb.dead, st.claimSent+lease.Duration, (*deadRing)(hb))
	hb.mu.Lock()
	g.alarms.set(&hb.beat, time.Since(monoBase)+hb.interval(), (*beatRing)(hb))
	hb.mu.Unlock()
}

func (hb *heartbeat) interval() time.Duration { return hb.lease.Duration / 3 }

func (hb *heartbeat) note(o Outcome, err error) {
	if hb.st != nil {
		hb.st.note(o, hb.lease.Fence, err)
	}
}

func (hb *heartbeat) expire() {
	if hb.stopped.Load() {
		return
	}
	err := fmt.Errorf("%w: no heartbeat succeeded within the %s lease", ErrLeaseLost, hb.lease.Duration)
	hb.note(OutcomeLeaseLost, err)
	hb.cancel(err)
}

func (hb *heartbeat) renew() {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if hb.stopped.Load() {
		return
	}
	g, lease, interval := hb.g, *hb.lease, hb.interval()
	sent := time.Since(monoBase)
	hctx, hcancel := context.WithTimeout(context.WithoutCancel(hb.rctx), interval)
	err := g.store.Heartbeat(hctx, lease)
	hcancel()
	switch {
	case err == nil:
		g.alarms.set(&hb.dead, sent+lease.Duration, (*deadRing)(hb))
	case errors.Is(err, ErrLeaseLost):
		hb.lost.Store(true)
		hb.note(OutcomeLeaseLost, err)
		hb.cancel(ErrLeaseLost)
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
	hb.g.alarms.stop(&hb.dead)
	hb.mu.Lock()
	hb.g.alarms.stop(&hb.beat)
	hb.mu.Unlock()
}
