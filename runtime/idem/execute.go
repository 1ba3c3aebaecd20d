package idem

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/impl"
)

// A first execution's run, once its claim was granted (do.go): fn runs
// under its ctx (fnCtx) with a heartbeat renewing its lease, and what it
// returned is recorded. Same-key callers in this process wait on its
// flight.

// execute runs fn as the key's owner: heartbeats, panics, lease loss and
// recording the outcome.
func execute[R any](ctx context.Context, st *state, lease idemstore.Lease, status idemstore.ClaimStatus, overrideReason string, fn func(context.Context) (R, error)) (r R, err error) {
	x := start(ctx, st, lease)
	done := false
	defer func() {
		if !done {
			// A panic from the claim on: fn's, its heartbeat's, or one in
			// the Guard's own work (an observer, the codec, the sealer, the
			// store). recover returns nil only for runtime.Goexit (t.Fatal
			// in a test): panic(nil) arrives as a *runtime.PanicNilError.
			// Either way the key is released as after an error, unless the
			// outcome was already recorded, and a Goexit goes on unwinding
			// the goroutine.
			p := recover()
			x.abandon(ctx, st, lease, p)
			if p != nil {
				panic(p)
			}
		}
	}()
	st.announce(status, lease.Fence, overrideReason)
	r, err = fn(&x.ctx)
	x.hb.fnReturned()
	x.ctx.end()
	if p := x.hb.panicked.Load(); p != nil {
		panic(p.v) // in the heartbeat's goroutine it would end the process
	}
	// The beats go on until the outcome is written: a store slower to
	// complete than the rest of the lease must not hand the key on while
	// the completion is on its way.
	r, err = record(ctx, st, lease, x, r, err)
	x.hb.stop()
	done = true
	if p := x.hb.panicked.Load(); p != nil {
		panic(p.v) // a beat's, while the outcome was written
	}
	return r, err
}

// start makes the execution of an owned call: its flight (same-key
// callers in process wait on it), fn's ctx and its heartbeat.
func start(ctx context.Context, st *state, lease idemstore.Lease) *execution {
	g, spec := st.g, st.spec
	x := &execution{run: running{lease: lease, codec: recordCodec{g: g, spec: spec, key: lease.Key}}}
	if st.steps != nil {
		x.run.steps.Store(&steps{recorded: st.steps})
	}
	x.flight = g.startFlight(lease.Key, st.fp, spec)
	x.ctx.parent, x.ctx.run = ctx, &x.run
	x.run.ctx = &x.ctx
	x.hb.start(g, &x.ctx, &x.run.lease, st)
	return x
}

// abandon gives the key back after a panic (p) or runtime.Goexit (p ==
// nil) between the claim and the end of recording: it stops the
// heartbeat, releases the key unless the outcome was recorded (settled)
// and ends the flight. What it calls may panic again (the same faulty
// store or observer): that is swallowed, the caller gets p.
func (x *execution) abandon(ctx context.Context, st *state, lease idemstore.Lease, p any) {
	g, spec := st.g, st.spec
	x.hb.stop()
	x.ctx.end()
	if x.settled {
		return // the outcome is recorded and reported but for this panic
	}
	quietly(func() {
		wctx, wcancel := g.writeCtx(ctx, lease)
		defer wcancel()
		if rerr := g.store.Release(wctx, lease); rerr != nil {
			st.note(OutcomeStoreError, lease.Fence, rerr)
		}
	})
	x.settle(g, lease.Key, false, nil, nil)
	quietly(func() {
		if p == nil {
			st.ev(OutcomeFailed, lease.Fence, fmt.Errorf("idem: %s called runtime.Goexit", spec.Name))
			return
		}
		st.ev(OutcomeFailed, lease.Fence, fmt.Errorf("idem: %s panicked: %v", spec.Name, p))
	})
}

// settle ends x's flight once its outcome is recorded (or never will be):
// a panic after it (an observer's) has nothing to release.
func (x *execution) settle(g *Guard, key string, shared bool, value any, err error) {
	x.settled = true
	g.endFlight(key, x.flight, shared, value, err)
}

// marshalResult is c.result(v), and the value of a panic in it (the
// codec's, the sealer's, a result method's), which it turns into an
// unencodable result.
func marshalResult(c *recordCodec, v any) (data []byte, p *panicValue, err error) {
	defer func() {
		if r := recover(); r != nil {
			p = &panicValue{r}
			err = fmt.Errorf("%w: encoding it panicked: %v", ErrResultNotEncodable, r)
		}
	}()
	data, err = c.result(v)
	return data, nil, err
}

// panicValue is a recovered panic's value, to panic with again.
type panicValue struct{ v any }

// record stores what fn returned (r, err) under lease: the result, a
// recorded failure (on_failure=lock) or a release.
func record[R any](ctx context.Context, st *state, lease idemstore.Lease, x *execution, r R, err error) (R, error) {
	var zero R
	g, spec := st.g, st.spec
	wctx, wcancel := x.writeCtx(ctx, g, lease)
	defer wcancel()
	// The store said another caller owns the key now: store nothing. (A
	// lease that only ran out without heartbeats canceled fn's ctx too;
	// if fn still succeeded, Complete's compare-and-set decides.)
	if x.hb.lost.Load() {
		x.settle(g, lease.Key, false, nil, nil)
		lerr := fmt.Errorf("%s: %w (fence %d): result not stored", spec.Name, ErrLeaseLost, lease.Fence)
		st.ev(OutcomeLeaseLost, lease.Fence, lerr)
		return zero, lerr
	}
	if err != nil {
		g.recordFailure(wctx, st, lease, x, err)
		return r, err
	}
	var v any = r // boxed once: the codec, the store and the flight share it
	data, p, merr := marshalResult(&x.run.codec, v)
	if merr != nil {
		// fn ran: releasing the key would let the next call run it again.
		if p == nil && !errors.Is(merr, ErrResultTooLarge) {
			merr = fmt.Errorf("%w: %w", ErrResultNotEncodable, merr)
		}
		uerr := g.unstorable(wctx, st, lease, x, merr)
		if p != nil {
			panic(p.v)
		}
		return r, uerr
	}
	if cerr := g.store.Complete(wctx, lease, idemstore.Result{Data: data, Value: v}); cerr != nil {
		if errors.Is(cerr, ErrResultTooLarge) {
			return r, g.unstorable(wctx, st, lease, x, cerr)
		}
		x.settle(g, lease.Key, false, nil, nil)
		if errors.Is(cerr, ErrLeaseLost) {
			st.ev(OutcomeLeaseLost, lease.Fence, cerr)
			return zero, fmt.Errorf("%s: %w (fence %d): result not stored", spec.Name, ErrLeaseLost, lease.Fence)
		}
		st.ev(OutcomeStoreError, lease.Fence, cerr)
		// The function ran: hand its result back, and say it is not recorded.
		return r, unavailable(spec.Name+" ran but its result was not recorded: ", cerr)
	}
	x.settle(g, lease.Key, true, v, nil)
	st.ev(OutcomeExecuted, lease.Fence, nil)
	return r, nil
}

// recordFailure records fn's error err under lease as the function's
// on_failure says: a recorded failure (lock) or a release (unlock).
func (g *Guard) recordFailure(wctx context.Context, st *state, lease idemstore.Lease, x *execution, err error) {
	spec := st.spec
	shared := false
	var recorded error
	if spec.OnFailure == FailureLock {
		rec := &RecordedError{Func: spec.Name, Message: err.Error()}
		if ferr := g.fail(wctx, spec, lease, rec); ferr != nil {
			st.note(OutcomeStoreError, lease.Fence, ferr)
		} else {
			shared, recorded = true, rec
		}
	} else if rerr := g.store.Release(wctx, lease); rerr != nil {
		st.note(OutcomeStoreError, lease.Fence, rerr)
	}
	x.settle(g, lease.Key, shared, nil, recorded)
	st.ev(OutcomeFailed, lease.Fence, err)
}

// unstorable records a failure for a call whose function ran but whose
// result cannot be stored (cause wraps ErrResultTooLarge or
// ErrResultNotEncodable): the effect happened, so duplicates get the
// recorded failure instead of running it again. It returns the error for
// the first caller, which also gets fn's own value.
func (g *Guard) unstorable(wctx context.Context, st *state, lease idemstore.Lease, x *execution, cause error) error {
	spec := st.spec
	rec := &RecordedError{Func: spec.Name, Message: cause.Error(), Cause: causeOf(causeCode(cause))}
	shared := false
	if ferr := g.fail(wctx, spec, lease, rec); ferr != nil {
		st.note(OutcomeStoreError, lease.Fence, ferr)
	} else {
		shared = true
	}
	x.settle(g, lease.Key, shared, nil, rec)
	st.ev(OutcomeFailed, lease.Fence, cause)
	return fmt.Errorf("%s ran but its result was not recorded: %w", spec.Name, cause)
}

// fail records rec as the failure of the call lease owns: spec's identity
// header, then the failure as JSON, sealed as the Guard seals. A record
// that cannot be sealed is not written in the clear: the key is released.
func (g *Guard) fail(wctx context.Context, spec *Spec, lease idemstore.Lease, rec *RecordedError) error {
	body := g.failureBody(spec, rec)
	data := make([]byte, 0, impl.HeaderLen(spec.Signature)+len(body))
	data, err := g.sealRecord(spec, lease.Key, append(appendHeader(data, spec), body...))
	if err != nil {
		if rerr := g.store.Release(wctx, lease); rerr != nil {
			return fmt.Errorf("%w (and releasing the key: %w)", err, rerr)
		}
		return err
	}
	return g.store.Fail(wctx, lease, idemstore.Result{Data: data, Value: rec})
}

// unavailable wraps a store error in ErrStoreUnavailable, once: a store
// that already says so is not made to say it twice.
func unavailable(context string, err error) error {
	if errors.Is(err, ErrStoreUnavailable) {
		return fmt.Errorf("%s%w", context, err)
	}
	return fmt.Errorf("%w: %s%w", ErrStoreUnavailable, context, err)
}

// failureBody is rec as JSON, its message cut to fit what a reader
// inflates (readLimit), so that the failure replays however long the
// function's error text was.
func (g *Guard) failureBody(spec *Spec, rec *RecordedError) []byte {
	fr := failureRecord{Message: rec.Message, Cause: causeCode(rec.Cause)}
	limit := g.readLimit(spec) - impl.HeaderLen(spec.Signature)
	for {
		body, _ := json.Marshal(fr)
		over := len(body) - limit
		if limit <= 0 || over <= 0 || fr.Message == "" {
			return body
		}
		// Escaping can make the JSON several times the message: keep the
		// share of it that fits, which shortens it on every turn.
		cut := strings.TrimSuffix(fr.Message, "…")
		if cut = cut[:max(len(cut)*limit/len(body)-len("…"), 0)]; cut == "" {
			fr.Message = ""
			continue
		}
		fr.Message = strings.ToValidUTF8(cut, "") + "…"
	}
}

type failureRecord struct {
	Message string `json:"message"`
	// Cause names the runtime's own failure (see recordedCauses).
	Cause string `json:"cause,omitempty"`
}

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
	lease idemstore.Lease
	codec recordCodec
	ctx   *fnCtx // a step that finds the lease lost cancels it
	// steps is made by the call's first step, or at the start for a
	// resumed call whose record held steps: most calls have none.
	steps atomic.Pointer[steps]
}

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
	lease *idemstore.Lease // the execution's
	ctx   *fnCtx           // fn's
	mu    sync.Mutex       // serializes beats with stop
	// stopped is set by stop, lost when the store said the key has
	// another owner while fn ran, returned once fn has returned.
	stopped, lost, returned atomic.Bool
	beat                    alarm // the next beat
	// dead fires when the lease has run out, counted from when the last
	// successful heartbeat (or the claim) was sent (okSent), so the
	// function is stopped no later than the store can hand the key on.
	// It is set by the first beat, not at the start: the first beat is
	// due well before the lease ends, and most calls end before it, so
	// they schedule one alarm instead of two.
	dead    alarm
	okSent  time.Duration
	deadSet bool // under mu
	// Once fn has returned, the write of its outcome (bindWrite) is
	// canceled with cancelWrite when the lease has run out unrenewed,
	// but not before writeSoft.
	cancelWrite context.CancelCauseFunc // under mu
	writeSoft   time.Duration           // under mu
	// panicked is the first panic of a beat (the store's Heartbeat, an
	// observer's note), recovered in the alarm's goroutine, where it
	// would end the process, and panicked again in the caller's
	// goroutine once fn returns.
	panicked atomic.Pointer[panicValue]
}

// beatRing and deadRing are a heartbeat's two alarms: the same pointer,
// two ring methods.
type (
	beatRing heartbeat
	deadRing heartbeat
)

func (r *beatRing) ring() { (*heartbeat)(r).renew() }
func (r *deadRing) ring() { (*heartbeat)(r).expire() }

func (hb *heartbeat) start(g *Guard, ctx *fnCtx, lease *idemstore.Lease, st *state) {
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
		hb.panicked.CompareAndSwap(nil, &panicValue{p})
		hb.ctx.cancel(fmt.Errorf("idem: the heartbeat panicked: %v", p))
	}
}

func (hb *heartbeat) expire() {
	defer hb.recoverPanic()
	if hb.stopped.Load() {
		return
	}
	if hb.returned.Load() {
		hb.expireWrite()
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
	// A beat sent while fn ran reports what it finds; one sent after only
	// keeps the lease (see below).
	afterFn := hb.returned.Load()
	hctx, hcancel := context.WithTimeout(context.WithoutCancel(hb.ctx), interval)
	err := g.store.Heartbeat(hctx, lease)
	hcancel()
	switch {
	case err == nil:
		hb.okSent = sent
		g.alarms.set(&hb.dead, sent+lease.Duration, (*deadRing)(hb))
	case afterFn:
		// Only keeping the lease while the outcome is written: what the
		// store says of the key (completed already, by that write, or
		// another owner's) is the write's to report.
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

// fnReturned says fn has returned: from now on the beats only keep the
// lease while the outcome is written, and a beat's failure is not
// reported, since the write of the outcome finds out and says what
// happened to the key.
func (hb *heartbeat) fnReturned() { hb.returned.Store(true) }

// writeCap bounds the writes of an outcome, in writeCtx bounds, however
// long the heartbeats keep the lease.
const writeCap = 6

// writeCtx is the ctx of the writes that record x's outcome once fn
// returned. It is g.writeCtx's, but bounded by the lease as the
// heartbeats keep it rather than by a fixed time: a store that takes the
// outcome more slowly than a lease while it still takes the heartbeats
// (a loaded DynamoDB) gets the time it needs, up to writeCap bounds; one
// that takes neither gives up as before, no sooner than g.writeCtx's
// bound. Waiting longer is safe: the write is fenced, and a late one
// after a takeover is refused.
func (x *execution) writeCtx(ctx context.Context, g *Guard, lease idemstore.Lease) (context.Context, context.CancelFunc) {
	if g.inProcess {
		return g.writeCtx(ctx, lease)
	}
	bound := max(lease.Duration, writeTimeoutFloor)
	tctx, tcancel := context.WithTimeout(context.WithoutCancel(ctx), writeCap*bound)
	wctx, wcancel := context.WithCancelCause(tctx)
	x.hb.bindWrite(wcancel, time.Since(monoBase)+bound)
	return wctx, func() { wcancel(nil); tcancel() }
}

// bindWrite hands the beats the write of the outcome to cancel, and arms
// the dead alarm for the later of soft and the lease's end.
func (hb *heartbeat) bindWrite(cancel context.CancelCauseFunc, soft time.Duration) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if hb.stopped.Load() {
		return
	}
	hb.cancelWrite, hb.writeSoft, hb.deadSet = cancel, soft, true
	hb.g.alarms.set(&hb.dead, max(soft, hb.okSent+hb.lease.Duration), (*deadRing)(hb))
}

// expireWrite is the dead alarm once fn returned: it cancels the write of
// the outcome if the lease ran out unrenewed and the write had its soft
// bound, else looks again when one of them ends.
func (hb *heartbeat) expireWrite() {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if hb.stopped.Load() || hb.cancelWrite == nil {
		return
	}
	now := time.Since(monoBase)
	if end := max(hb.writeSoft, hb.okSent+hb.lease.Duration); now < end {
		hb.g.alarms.set(&hb.dead, end, (*deadRing)(hb))
		return
	}
	hb.cancelWrite(fmt.Errorf("%w: no heartbeat succeeded within the %s lease while the outcome was written", ErrLeaseLost, hb.lease.Duration))
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

// flightTable tracks the calls this process is executing, so same-key
// callers in the process are answered without asking the store: one
// mutex and one map, as in singleflight. A Guard over an in-process store
// (see inProcess) keeps no flights: asking its store is as cheap, and the
// store answers the same (it keeps the decoded value and wakes waiters
// itself).
type flightTable struct {
	mu sync.Mutex
	m  map[string]*flight
}

// flight is a call this process is executing, as same-key callers see it.
type flight struct {
	fp idemstore.Fingerprint
	// spec is the running function's: a same-key caller of another
	// function that shares its name (ErrFunctionMismatch) is not handed
	// its value.
	spec *Spec
	mu   sync.Mutex
	// done is made by the first caller that waits, so an execution nobody
	// waits on (almost all) makes no channel; finish closes it.
	done  chan struct{}
	ended bool
	// Set before ended. shared: value and err are the recorded outcome
	// and may be handed to waiting duplicates.
	shared bool
	value  any
	err    error
}

// closedChan is what wait returns for a flight that has ended.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// wait returns a channel closed when f ends; f's outcome fields may be
// read once it is.
func (f *flight) wait() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return closedChan
	}
	if f.done == nil {
		f.done = make(chan struct{})
	}
	return f.done
}

// execution is what one owned call keeps in process while fn runs, in a
// single allocation: its heartbeat and fn's ctx with what it carries. Its
// flight, which same-key callers in process wait on, is made only by a
// Guard that keeps flights (see flightTable).
type execution struct {
	flight *flight
	hb     heartbeat
	run    running
	ctx    fnCtx // fn's
	// settled: the outcome is recorded (settle); a panic after it has
	// nothing to release.
	settled bool
}

// flight returns the key's flight, or nil.
func (g *Guard) flight(key string) *flight {
	if g.inProcess {
		return nil
	}
	t := &g.flights
	t.mu.Lock()
	f := t.m[key]
	t.mu.Unlock()
	return f
}

// startFlight makes and returns the key's flight for a call of spec with
// payload fp, if the Guard keeps flights; nil if it does not.
func (g *Guard) startFlight(key string, fp idemstore.Fingerprint, spec *Spec) *flight {
	if g.inProcess {
		return nil
	}
	f := &flight{fp: fp, spec: spec}
	t := &g.flights
	t.mu.Lock()
	if t.m == nil {
		t.m = make(map[string]*flight)
	}
	t.m[key] = f
	t.mu.Unlock()
	return f
}

// endFlight ends f, the key's flight if the Guard keeps flights.
func (g *Guard) endFlight(key string, f *flight, shared bool, value any, err error) {
	if !g.inProcess {
		g.flights.finish(key, f, shared, value, err)
	}
}

func (t *flightTable) finish(key string, f *flight, shared bool, value any, err error) {
	t.mu.Lock()
	if t.m[key] == f {
		delete(t.m, key)
	}
	t.mu.Unlock()
	f.mu.Lock()
	if f.ended {
		f.mu.Unlock()
		return
	}
	f.shared, f.value, f.err, f.ended = shared, value, err, true
	if f.done != nil {
		close(f.done)
	}
	f.mu.Unlock()
}

// alarms runs functions at given monotonic instants for one Guard, on a
// single runtime timer set for the earliest of them. Every owned call
// needs two (its next heartbeat, and the moment its lease runs out without
// one). It is kept for speed against a time.AfterFunc per heartbeat
// (docs/BENCHMARKS.md, "What each speed mechanism earns"). Arming a runtime timer earlier than any the runtime waits
// for wakes its network poller, and a stopped runtime timer can linger in
// the runtime's heap holding its function (and through it the Guard).
// Calls start in time order, so a new alarm is rarely the earliest and
// the one timer is rarely re-armed; a call that ends removes its alarms,
// and a timer that then finds nothing due simply sets itself for the next
// one.
//
// Each due function runs in its own goroutine, as with time.AfterFunc: a
// heartbeat may block on the store while another call's lease runs out.
type alarms struct {
	mu    sync.Mutex
	q     alarmQueue
	timer *time.Timer
	armed time.Duration // the instant timer is set for; 0 when not set
}

// alarm is one scheduled function. The zero value is unscheduled.
type alarm struct {
	at time.Duration // since monoBase
	fn ringer
	i  int // index in the queue + 1; 0 when not queued
}

// ringer is what an alarm runs. An interface rather than a func: a
// heartbeat passes itself (a pointer), where a method value or closure
// would cost the first execution an allocation per alarm.
type ringer interface{ ring() }

// alarmFunc runs a plain function as an alarm.
type alarmFunc func()

func (f alarmFunc) ring() { f() }

// set schedules al to run fn at the monotonic instant at (since
// monoBase), replacing any earlier schedule of al.
func (a *alarms) set(al *alarm, at time.Duration, fn ringer) {
	a.mu.Lock()
	al.at, al.fn = at, fn
	if al.i > 0 {
		heap.Fix(&a.q, al.i-1)
	} else {
		heap.Push(&a.q, al)
	}
	if a.armed == 0 || at < a.armed {
		a.arm(at, time.Since(monoBase))
	}
	a.mu.Unlock()
}

// stop unschedules al; it reports whether al was still to run.
func (a *alarms) stop(al *alarm) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if al.i == 0 {
		return false
	}
	heap.Remove(&a.q, al.i-1)
	return true
}

func (a *alarms) arm(at, now time.Duration) {
	if a.timer == nil {
		a.timer = time.AfterFunc(at-now, a.fire)
	} else {
		a.timer.Reset(at - now)
	}
	a.armed = at
}

// fire runs what is due and sets the timer for what is next.
func (a *alarms) fire() {
	now := time.Since(monoBase)
	var due []ringer
	a.mu.Lock()
	for len(a.q) > 0 && a.q[0].at <= now {
		due = append(due, heap.Pop(&a.q).(*alarm).fn)
	}
	a.armed = 0
	if len(a.q) > 0 {
		a.arm(a.q[0].at, now)
	}
	a.mu.Unlock()
	for _, fn := range due {
		go fn.ring()
	}
}

// alarmQueue is a min-heap of alarms by instant (container/heap).
type alarmQueue []*alarm

func (q alarmQueue) Len() int           { return len(q) }
func (q alarmQueue) Less(i, j int) bool { return q[i].at < q[j].at }
func (q alarmQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].i, q[j].i = i+1, j+1
}
func (q *alarmQueue) Push(x any) {
	al := x.(*alarm)
	al.i = len(*q) + 1
	*q = append(*q, al)
}
func (q *alarmQueue) Pop() any {
	old := *q
	al := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	al.i = 0
	return al
}
