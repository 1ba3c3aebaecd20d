package idem

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// A stream's first execution (stream.go): fn runs in a goroutine of its
// own as the producer, records every item, and hands it to the caller
// that claimed the key while that caller ranges.

// errStreamIdle is the cause fn's ctx is canceled with when the caller
// has left and fn records no item for a whole lease.
var errStreamIdle = errors.New("idem: stream abandoned: its caller left and no item was recorded for a whole lease")

// producerBuffer is how many recorded items the producer may be ahead of
// its ranging caller before yield waits for it.
const producerBuffer = 16

// producer is one run of a stream's fn.
type producer[T any] struct {
	g        *Guard
	st       *state // its own copy of the claiming call's: it outlives the ranging
	lease    idemstore.Lease
	x        *execution
	parent   context.Context // fn's parent: the caller's values, not its cancelation
	streamer idemstore.Streamer
	ch       chan T        // recorded items, to the ranging caller; closed at the end
	det      chan struct{} // closed when the caller left (detach)
	once     sync.Once

	mu      sync.Mutex // serializes yield, and guards what follows
	stopped bool       // fn returned, or an item could not be recorded
	seq     uint64     // items recorded
	size    int        // their bytes, before sealing (the budget's measure)
	failed  error      // why an item could not be recorded
	idle    *time.Timer
	idled   atomic.Bool // fn's ctx was canceled by the idle rule

	// The outcome, set before ch is closed.
	err      error
	panicked *panicValue
}

// produce runs fn as the key's new owner, and yields what it records to
// the caller (r) while it ranges.
func produce[T any](ctx context.Context, st *state, res *idemstore.ClaimResult, owner idemstore.Token, overrideReason string, r *reader[T], fn func(context.Context, func(T) bool) error) error {
	lease, err := takeLease(ctx, st, res, owner, overrideReason)
	if err != nil {
		return err
	}
	pst := *st
	pst.wait, pst.cancel, pst.unmemoized = nil, nil, nil
	var parent context.Context = noCursor{context.WithoutCancel(ctx)}
	p := &producer[T]{g: st.g, st: &pst, lease: lease, parent: parent, streamer: st.g.store.(idemstore.Streamer),
		ch: make(chan T, producerBuffer), det: make(chan struct{})}
	p.x = start(parent, &pst, lease)
	pst.announce(res.Status, lease.Fence, overrideReason)
	go p.run(fn)
	return p.deliver(ctx, r)
}

// run is the producer's goroutine: fn, then recording its end.
func (p *producer[T]) run(fn func(context.Context, func(T) bool) error) {
	done := false
	defer func() {
		if !done {
			// As in execute: a panic (or runtime.Goexit) of fn's, the
			// heartbeat's or the Guard's own work releases the key unless
			// the end was recorded. It goes to the ranging caller, if any.
			v := recover()
			p.end()
			p.x.abandon(p.parent, p.st, p.lease, v)
			if v != nil {
				p.panicked = &panicValue{v}
			} else {
				p.err = fmt.Errorf("idem: %s called runtime.Goexit", p.st.spec.Name)
			}
			close(p.ch)
		}
	}()
	err := fn(&p.x.ctx, p.yield)
	p.end()
	p.x.hb.fnReturned() // beats go on until the end is written, as in execute
	p.x.ctx.end()
	if hp := p.x.hb.panicked.Load(); hp != nil {
		panic(hp.v)
	}
	p.err = p.record(err)
	p.x.hb.stop()
	if hp := p.x.hb.panicked.Load(); hp != nil {
		p.panicked = hp // a beat's, while the end was written
	}
	done = true
	close(p.ch)
}

// end makes yield refuse from now on (fn returned).
func (p *producer[T]) end() {
	p.mu.Lock()
	p.stopped = true
	if p.idle != nil {
		p.idle.Stop()
	}
	p.mu.Unlock()
}

// yield is fn's: it records v as the next item, then hands it to the
// ranging caller (waiting while the caller is producerBuffer items
// behind, not once it has left). false: fn must stop.
func (p *producer[T]) yield(v T) bool {
	p.mu.Lock()
	defer p.mu.Unlock() // deferred: the codec or the store may panic
	if p.stopped {
		return false
	}
	if err := p.append(v); err != nil {
		p.stopped, p.failed = true, err
		p.x.ctx.cancel(err) // fn stops: nothing more can be recorded
		return false
	}
	if p.idle != nil {
		p.idle.Reset(p.lease.Duration)
	}
	select {
	case p.ch <- v:
	case <-p.det:
	}
	return true
}

// append records v as item p.seq. Caller holds p.mu.
func (p *producer[T]) append(v T) error {
	g, spec, lease := p.g, p.st.spec, p.lease
	rec, err := p.x.run.codec.record(v)
	if err != nil {
		return fmt.Errorf("%w: stream item %d: %w", ErrResultNotEncodable, p.seq, err)
	}
	p.size += len(rec)
	if err := g.overBudget(spec, p.size); err != nil {
		return fmt.Errorf("stream item %d: %w", p.seq, err)
	}
	data, err := g.sealRecord(spec, g.itemKey(lease.Key, lease.Fence, p.seq), rec)
	if err != nil {
		return fmt.Errorf("%w: stream item %d: %w", ErrResultNotEncodable, p.seq, err)
	}
	wctx, cancel := g.writeCtx(p.parent, lease)
	err = p.streamer.AppendItem(wctx, lease, p.seq, data)
	cancel()
	if err != nil {
		return err
	}
	p.seq++
	return nil
}

// record stores the stream's end once fn returned fnErr: completed with
// its item count, a failure as on_failure says, or nothing when the lease
// was lost. It returns the ranging caller's error.
func (p *producer[T]) record(fnErr error) error {
	g, st, lease, x := p.g, p.st, p.lease, p.x
	spec := st.spec
	wctx, wcancel := x.writeCtx(p.parent, g, lease)
	defer wcancel()
	failed := p.failed
	switch {
	case x.hb.lost.Load() || errors.Is(failed, ErrLeaseLost):
		x.settle(g, lease.Key, false, nil, nil)
		lerr := fmt.Errorf("%s: %w (fence %d): the stream is not recorded past item %d", spec.Name, ErrLeaseLost, lease.Fence, p.seq)
		st.ev(OutcomeLeaseLost, lease.Fence, lerr)
		return lerr
	case errors.Is(failed, ErrResultTooLarge) || errors.Is(failed, ErrResultNotEncodable):
		// fn ran: releasing the key would let the next call run it again.
		return g.unstorable(wctx, st, lease, x, failed)
	case failed != nil:
		p.release(wctx)
		x.settle(g, lease.Key, false, nil, nil)
		st.ev(OutcomeStoreError, lease.Fence, failed)
		return unavailable(fmt.Sprintf("%s: stream item %d was not recorded: ", spec.Name, p.seq), failed)
	case fnErr != nil && p.idled.Load():
		// Stopped by the idle rule, not by its own failure: a retry runs it.
		p.release(wctx)
		x.settle(g, lease.Key, false, nil, nil)
		st.ev(OutcomeFailed, lease.Fence, fnErr)
		return fnErr
	case fnErr != nil:
		g.recordFailure(wctx, st, lease, x, fnErr)
		return fnErr
	}
	end, err := g.streamEndRecord(spec, lease.Key, p.seq)
	if err == nil {
		err = g.store.Complete(wctx, lease, idemstore.Result{Data: end})
	}
	if err != nil {
		return p.unrecorded(wctx, err)
	}
	x.settle(g, lease.Key, true, nil, nil)
	st.ev(OutcomeExecuted, lease.Fence, nil)
	return nil
}

// unrecorded is the caller's error when the stream's end could not be
// recorded (err).
func (p *producer[T]) unrecorded(wctx context.Context, err error) error {
	g, st, lease, x := p.g, p.st, p.lease, p.x
	spec := st.spec
	if errors.Is(err, ErrResultTooLarge) {
		return g.unstorable(wctx, st, lease, x, err)
	}
	x.settle(g, lease.Key, false, nil, nil)
	if errors.Is(err, ErrLeaseLost) {
		st.ev(OutcomeLeaseLost, lease.Fence, err)
		return fmt.Errorf("%s: %w (fence %d): the stream's end is not recorded", spec.Name, ErrLeaseLost, lease.Fence)
	}
	st.ev(OutcomeStoreError, lease.Fence, err)
	return unavailable(spec.Name+": the stream's end was not recorded: ", err)
}

// release gives the key up after a run that cannot finish.
func (p *producer[T]) release(wctx context.Context) {
	if err := p.g.store.Release(wctx, p.lease); err != nil {
		p.st.note(OutcomeStoreError, p.lease.Fence, err)
	}
}

// deliver yields the recorded items to the caller that claimed the key,
// until the stream ends, the caller stops ranging, or its ctx ends.
func (p *producer[T]) deliver(ctx context.Context, r *reader[T]) error {
	spec, fence := p.st.spec, p.lease.Fence
	// However the caller leaves (the end, a break, its ctx, a panic in its
	// loop), the producer must not wait for it.
	defer p.detach()
	if r.run != 0 && r.run != fence {
		// The caller resumes a run that is over: this claim started
		// another, which goes on without it.
		return r.restarted(spec, "the stream's current run is the one under fence "+fmt.Sprint(fence))
	}
	var seq uint64
	for {
		select {
		case v, ok := <-p.ch:
			if !ok {
				if p.panicked != nil {
					panic(p.panicked.v)
				}
				return p.err
			}
			seq++
			if seq <= r.next {
				continue // before the caller's cursor
			}
			if !r.item(seq-1, fence, v) {
				return nil
			}
		case <-ctx.Done():
			return fmt.Errorf("%s: the stream goes on being recorded without this caller: %w", spec.Name, context.Cause(ctx))
		}
	}
}

// detach lets the producer go on without the ranging caller: yield no
// longer waits for it, and fn is canceled if it records no item for a
// whole lease.
func (p *producer[T]) detach() {
	p.once.Do(func() {
		close(p.det)
		p.mu.Lock()
		if !p.stopped {
			p.idle = time.AfterFunc(p.lease.Duration, func() {
				p.idled.Store(true)
				p.x.ctx.cancel(errStreamIdle)
			})
		}
		p.mu.Unlock()
	})
}
