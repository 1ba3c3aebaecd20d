package idem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/impl"
)

// writeTimeoutFloor is the least time the store writes a Guard makes after
// the function returned (complete, fail, release) may take; see writeCtx.
var writeTimeoutFloor = 5 * time.Second

// writeCtx is the ctx of the store writes after the function returned.
// They run even if the caller's ctx is canceled by now, because the
// function's effect already happened, and they are bounded by the lease
// (at least writeTimeoutFloor) counted from the moment the function
// returned: a long function kept alive by heartbeats still gets its whole
// bound for recording its result. The write of an owned call's outcome
// may last longer, while the heartbeats keep the lease
// (execution.writeCtx).
//
// It is the standard library's timer ctx: contexts a store derives from it
// attach to it without a watcher goroutine each, which a hand-written
// Context cannot offer (docs/BENCHMARKS.md measures the timer's cost).
//
// A store whose calls never wait on I/O (InProcess) needs no bound: its
// writes get the caller's ctx without its cancelation, which for a ctx that
// cannot be canceled (Background) is the ctx itself.
func (g *Guard) writeCtx(ctx context.Context, lease idemstore.Lease) (context.Context, context.CancelFunc) {
	if g.inProcess {
		if ctx.Done() == nil {
			return ctx, func() {}
		}
		return context.WithoutCancel(ctx), func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), max(lease.Duration, writeTimeoutFloor))
}

// Do runs fn at most once for the key written into c, following c's Spec.
// Generated wrappers call it; hand-written ones can too:
//
//	c := g.Begin(&specCharge, req.OrderID)
//	return idem.Do(ctx, c, func(ctx context.Context) (*Receipt, error) { return charge(ctx, req) })
//
// fn receives a ctx that carries the call's fence (FenceFrom) and is
// canceled with cause ErrLeaseLost if the lease is lost while it runs.
//
// What Do returns:
//   - fn ran and its result was recorded: fn's value, nil.
//   - a duplicate: the replayed value (or *RecordedError, ErrDuplicate,
//     ErrInProgress, ErrPayloadMismatch, *OutOfOrderError) per the Spec.
//   - fn returned an error: fn's own value and error, unchanged.
//   - fn ran but its result could not be recorded: fn's value together
//     with an error wrapping ErrStoreUnavailable or ErrResultTooLarge, so a
//     caller that must answer someone (an HTTP handler) can still do so.
//   - fn's lease was lost: the zero value and an error wrapping ErrLeaseLost.
//   - the store failed before fn ran: the zero value and ErrStoreUnavailable
//     (fn did not run) unless the Guard fails open.
//
// To learn whether a call executed or replayed, pass a ctx from
// CaptureOutcome.
func Do[R any](ctx context.Context, c Call, fn func(context.Context) (R, error)) (R, error) {
	var zero R
	if ctx == nil {
		ctx = context.Background()
	}
	st := state{ctx: ctx}
	err := c.finish(&st) // sets st.g and st.spec unless c was finished
	g, spec := st.g, st.spec
	if g == nil {
		return zero, err
	}
	if err != nil {
		st.release()
		g.observe(ctx, Event{Func: spec.Name, Outcome: OutcomeInvalidKey, Err: err, Final: true})
		return zero, fmt.Errorf("%s: %w", spec.Name, err)
	}
	if g.obs != nil {
		st.start = g.now() // only observers read durations
	}
	defer st.end() // deferred: a panic on the way (a store's, a codec's, an observer's) ends the call too
	return run(ctx, &st, fn)
}

// run is Do past the key: in process, claim, replay, wait or execute.
// Each turn of the loop asks once, in process or in the store; waiting for
// another owner ends in another turn.
func run[R any](ctx context.Context, st *state, fn func(context.Context) (R, error)) (R, error) {
	var zero R
	g := st.g
	var overrideReason string
	if st.spec.Ordered {
		if err := orderable(st); err != nil {
			return zero, err
		}
		overrideReason, st.order.Override = overrideFrom(ctx)
	}
	for {
		if f := g.flight(st.key); f != nil {
			if v, again, err := joinFlight[R](ctx, st, f); !again {
				return v, err
			}
			continue
		}
		owner := st.nextOwner()
		var res idemstore.ClaimResult
		if err := claim(ctx, st, owner, &res); err != nil {
			if errors.Is(err, errFailOpen) {
				return fn(ctx)
			}
			return zero, err
		}
		st.repeat = !owns(res.Status)
		switch res.Status {
		case idemstore.ClaimAcquired, idemstore.ClaimTakenOver:
			return own(ctx, st, &res, owner, overrideReason, fn)
		case idemstore.ClaimCompleted:
			return replay[R](st, &res)
		case idemstore.ClaimInProgress:
			if err := awaitOwner(ctx, st, &res); err != nil {
				return zero, err
			}
		default:
			return zero, refused(st, &res)
		}
	}
}

// orderable is nil if st's store supports ordering, as its ordered
// function needs.
func orderable(st *state) error {
	if o, ok := st.g.store.(idemstore.Orderer); !ok || !o.SupportsOrdering() {
		return fmt.Errorf("idem: %s is ordered (order=) but the store %T does not support ordering", st.spec.Name, st.g.store)
	}
	return nil
}

// refused is the error of a claim that neither acquired, replayed nor
// found an owner running: a recorded failure, a payload mismatch, an
// event out of order.
func refused(st *state, res *idemstore.ClaimResult) error {
	spec := st.spec
	switch res.Status {
	case idemstore.ClaimFailed:
		return replayFailure(st, res)
	case idemstore.ClaimMismatch:
		st.ev(OutcomeMismatch, res.Fence, nil)
		return fmt.Errorf("%s: %w", spec.Name, ErrPayloadMismatch)
	case idemstore.ClaimOutOfOrder:
		oerr := &OutOfOrderError{Func: spec.Name, LastAccepted: res.LastAccepted, Submitted: st.order.At, Grace: st.order.Grace}
		st.reason = oerr.Error()
		st.ev(OutcomeOutOfOrder, res.Fence, oerr)
		return oerr
	}
	err := fmt.Errorf("idem: %s: store returned unknown claim status %d", spec.Name, res.Status)
	st.ev(OutcomeStoreError, 0, err)
	return err
}

// joinFlight answers a caller whose key this process is running (f):
// ErrPayloadMismatch or ErrInProgress, or, in wait mode, f's outcome once
// it ends. again: f left nothing to share, look again.
func joinFlight[R any](ctx context.Context, st *state, f *flight) (v R, again bool, err error) {
	spec := st.spec
	st.repeat = true
	if f.fp != st.fp {
		st.ev(OutcomeMismatch, 0, nil)
		return v, false, fmt.Errorf("%s: %w", spec.Name, ErrPayloadMismatch)
	}
	if spec.OnDuplicate != DuplicateWait {
		return v, false, st.inProgress(time.Time{}, 0)
	}
	select {
	case <-f.wait():
	case <-st.waitCtx(ctx).Done():
		if ctx.Err() != nil {
			return v, false, context.Cause(ctx)
		}
		return v, false, st.inProgress(time.Time{}, 0)
	}
	if f.shared && sameFunction(f.spec, spec) {
		if f.err != nil {
			st.ev(OutcomeReplayed, 0, f.err)
			return v, false, f.err
		}
		if v, ok := f.value.(R); ok {
			st.ev(OutcomeReplayed, 0, nil)
			return v, false, nil
		}
	}
	return v, true, nil
}

// errFailOpen is claim's answer when the store is unavailable and the
// Guard fails open: run fn unguarded.
var errFailOpen = errors.New("idem: fail open")

// claim sends st's claim for owner, answered in *res (filled in place: a
// returned result would be copied once more on its way to the caller).
// Its errors are Do's, except errFailOpen.
func claim(ctx context.Context, st *state, owner idemstore.Token, res *idemstore.ClaimResult) error {
	g, spec := st.g, st.spec
	if err := ctx.Err(); err != nil {
		// Stores change nothing for a done ctx; saying so here keeps
		// a claim error below meaning "the claim may have landed".
		return fmt.Errorf("%s: %w", spec.Name, err)
	}
	g.orphans.settle(ctx, g, st.key)
	// The lease runs from when the claim was sent: a slow reply must
	// not make the owner think it has more lease than it has. An
	// in-process store says when it began the lease (leaseStart).
	if !g.inProcess {
		st.claimSent = time.Since(monoBase)
	}
	req := idemstore.ClaimRequest{Key: st.key, Fingerprint: st.fp, Owner: owner, Lease: spec.lease(), TTL: spec.ttl(), Order: st.order}
	st.claiming = owner
	var err error
	if g.records != nil {
		// Hand the store the record handle st has, keep the new one it
		// answers with, in the memo entry too. Here, not
		// in a function: copying the request and result through one
		// more call cost a replay ~60 instructions.
		var rec any
		*res, rec, err = g.records.ClaimRecord(ctx, req, st.rec)
		if rec != nil {
			st.rec = rec
			if st.memo != nil {
				st.memo.rec.Store(rec)
			}
		}
	} else {
		*res, err = g.store.Claim(ctx, req)
	}
	st.claiming = idemstore.Token{}
	if err != nil {
		return claimFailed(ctx, st, &req, err)
	}
	if g.inProcess && owns(res.Status) {
		st.claimSent = leaseStart(res.LeaseUntil, req.Lease)
	}
	return nil
}

// claimFailed is claim's error for a claim the store did not answer.
func claimFailed(ctx context.Context, st *state, req *idemstore.ClaimRequest, err error) error {
	g, spec := st.g, st.spec
	// The claim may have reached the store although its reply did not
	// reach us (a timeout, a cut connection): find it and give it up, so
	// the key is not stranded for a whole lease.
	g.orphans.adopt(ctx, g, *req, err)
	if cerr := impl.CtxErr(ctx, err); cerr != nil {
		// The caller's ctx ended, or the store's client timed out at its
		// deadline before the ctx's timer fired: not an outage to ride
		// out, and the error says so whatever the store called it.
		if errors.Is(err, cerr) {
			return fmt.Errorf("%s: %w", spec.Name, err)
		}
		return fmt.Errorf("%s: %w (%v)", spec.Name, cerr, err)
	}
	if errors.Is(err, ErrInvalidKey) {
		// A key the store can never hold (too long for its key limit): no
		// outage to ride out, so never a reason to run fn unguarded.
		st.ev(OutcomeInvalidKey, 0, err)
		return fmt.Errorf("%s: %w", spec.Name, err)
	}
	st.note(OutcomeStoreError, 0, err)
	if errors.Is(err, ErrCorruptRecord) {
		// The store answered, and what it holds is not ours to overwrite
		// or ignore: failing open would run fn unguarded on every call.
		return fmt.Errorf("%s: %w", spec.Name, err)
	}
	if g.failOpen {
		st.ev(OutcomeFailOpen, 0, err)
		return errFailOpen
	}
	return unavailable(spec.Name+": ", err)
}

// leaseStart is when an in-process store began the lease it granted, as
// a monotonic reading since monoBase: until minus the lease, when the
// store's clock is this process's monotonic clock (the memory store's
// default clock, whose times carry a monotonic reading); else now, for
// an injected store clock, which is later than the store's reading by
// the claim's own run time. It spares the Guard's clock read on every
// claim on such a store.
func leaseStart(until time.Time, lease time.Duration) time.Duration {
	if until != until.Round(0) {
		return until.Sub(monoBase) - lease
	}
	return time.Since(monoBase)
}

// own runs fn as the key's new owner, unless the caller's ctx ended while
// the claim was on its way (a client that ignores ctx deadlines): then the
// key is given back, since nobody waits for the work.
func own[R any](ctx context.Context, st *state, res *idemstore.ClaimResult, owner idemstore.Token, overrideReason string, fn func(context.Context) (R, error)) (R, error) {
	lease, err := takeLease(ctx, st, res, owner, overrideReason)
	if err != nil {
		var zero R
		return zero, err
	}
	return execute(ctx, st, lease, res.Status, overrideReason, fn)
}

// takeLease is the lease an owning claim granted, or, when the caller's
// ctx ended while the claim was on its way, an error once the key is
// given back.
func takeLease(ctx context.Context, st *state, res *idemstore.ClaimResult, owner idemstore.Token, overrideReason string) (idemstore.Lease, error) {
	g, spec := st.g, st.spec
	lease := idemstore.Lease{Key: st.key, Owner: owner, Fence: res.Fence, Duration: spec.lease(), TTL: spec.ttl()}
	st.steps = res.Steps
	if ctx.Err() == nil {
		return lease, nil
	}
	wctx, wcancel := g.writeCtx(ctx, lease)
	rerr := g.store.Release(wctx, lease)
	wcancel()
	st.announce(res.Status, lease.Fence, overrideReason)
	if rerr != nil {
		st.note(OutcomeStoreError, lease.Fence, rerr)
	}
	cerr := fmt.Errorf("%s: not run, the ctx ended during the claim: %w", spec.Name, ctx.Err())
	st.ev(OutcomeStoreError, lease.Fence, cerr)
	return idemstore.Lease{}, cerr
}

// announce reports how an owned call came to run: a takeover, an ordered
// event accepted out of order.
func (st *state) announce(status idemstore.ClaimStatus, fence uint64, overrideReason string) {
	if status == idemstore.ClaimTakenOver {
		st.ev(OutcomeTakeover, fence, nil)
	}
	if st.order.Override {
		st.reason = overrideReason
		st.ev(OutcomeOverride, fence, nil)
		st.reason = ""
	}
}

// replay answers a duplicate of a completed call: its stored result, or
// ErrDuplicate in raise mode.
func replay[R any](st *state, res *idemstore.ClaimResult) (R, error) {
	var zero R
	spec := st.spec
	if spec.OnDuplicate == DuplicateRaise {
		if _, err := st.g.openRecord(spec, st.key, res.Result.Data); err != nil {
			// Another function's record: this call is no duplicate.
			st.ev(OutcomeStoreError, res.Fence, err)
			return zero, fmt.Errorf("%s: %w", spec.Name, err)
		}
		st.ev(OutcomeDuplicate, res.Fence, nil)
		return zero, fmt.Errorf("%s: %w", spec.Name, ErrDuplicate)
	}
	v, err := decodeResult[R](st.g, spec, st.key, res.Result)
	if err != nil {
		st.ev(OutcomeStoreError, res.Fence, err)
		return zero, err
	}
	st.ev(OutcomeReplayed, res.Fence, nil)
	return v, nil
}

// replayFailure answers a duplicate of a call whose failure was recorded.
func replayFailure(st *state, res *idemstore.ClaimResult) error {
	spec := st.spec
	rerr := decodeFailure(st.g, spec, st.key, res.Result)
	if _, ok := rerr.(*RecordedError); !ok {
		// Not this function's failure to replay (another function's, or
		// a damaged header): fail closed.
		st.ev(OutcomeStoreError, res.Fence, rerr)
		return rerr
	}
	if spec.OnDuplicate == DuplicateRaise {
		st.ev(OutcomeDuplicate, res.Fence, rerr)
		return fmt.Errorf("%s: %w: %w", spec.Name, ErrDuplicate, rerr)
	}
	st.ev(OutcomeReplayed, res.Fence, rerr)
	return rerr
}

// awaitOwner handles a claim that found another owner running: nil means
// claim again (this process runs it after all, an orphaned claim of ours
// was given back, or the owner finished while a wait caller waited).
func awaitOwner(ctx context.Context, st *state, res *idemstore.ClaimResult) error {
	g, spec := st.g, st.spec
	if g.flight(st.key) != nil {
		return nil // our own process runs it: answer in process
	}
	if !st.reclaimed && g.orphans.reclaim(ctx, g, st.key) {
		st.reclaimed = true
		return nil // it was our own claim whose reply was lost
	}
	if spec.OnDuplicate != DuplicateWait {
		return st.inProgress(res.LeaseUntil, res.Fence)
	}
	wctx := st.waitCtx(ctx)
	if err := g.store.Wait(wctx, st.key); err != nil {
		// A store's client can notice a deadline before the ctx's timer
		// fires (impl.CtxErr): the caller's, or the wait's bound.
		if cerr := impl.CtxErr(ctx, err); cerr != nil {
			if cause := context.Cause(ctx); cause != nil {
				return cause
			}
			return fmt.Errorf("%s: %w (%v)", spec.Name, cerr, err)
		}
		if impl.CtxErr(wctx, err) != nil {
			return st.inProgress(res.LeaseUntil, res.Fence)
		}
		st.ev(OutcomeStoreError, res.Fence, err)
		return unavailable(spec.Name+": ", err)
	}
	return nil
}

// state is one Do call's bookkeeping. It lives on Do's stack (no closures
// capture it), which keeps a replay to the one allocation of its key.
type state struct {
	ctx   context.Context
	g     *Guard
	spec  *Spec
	key   string
	fp    idemstore.Fingerprint
	order idemstore.OrderClaim // an ordered call's entity record (Key) and event time
	// claimSent is when the last claim was sent, since monoBase (a
	// monotonic reading only): an acquired lease is counted from then.
	claimSent time.Duration
	reason    string
	reclaimed bool // an orphaned claim of this key was given back once
	// repeat: the key was found claimed (a duplicate, in process or in
	// the store), so it is worth remembering in the key memo.
	repeat bool
	owner  idemstore.Token // the first claim's owner token, minted with the key
	// unmemoized is the call state whose key the memo missed, held until
	// release (nil otherwise).
	unmemoized *callState
	// memo is the key memo's entry that gave key, if any; rec is the
	// store's handle on the key's record (recordClaimer), from memo or
	// from the last claim.
	memo   *memoEntry
	rec    any
	start  time.Time
	steps  map[string][]byte // the owned record's recovery points
	wait   context.Context   // bounds all waiting of this call; made on first need
	cancel context.CancelFunc
	// claiming is the owner of the claim on its way to the store: still
	// set when Do ends, the store's Claim panicked, and the claim may have
	// landed.
	claiming idemstore.Token
}

// end is Do's last word, deferred: it stops the call's waiting and hands
// its key's working memory back, and gives back a claim whose store call
// panicked, which a store may have applied before panicking: unreturned,
// it would hold the key for a whole lease. The panic goes on.
func (st *state) end() {
	if owner := st.claiming; owner != (idemstore.Token{}) {
		st.claiming = idemstore.Token{}
		g, l := st.g, idemstore.Lease{Key: st.key, Owner: owner, Duration: st.spec.lease(), TTL: st.spec.ttl()}
		quietly(func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(st.ctx), max(l.Duration, writeTimeoutFloor))
			defer cancel()
			_, _ = g.orphans.giveBack(ctx, g, l)
		})
	}
	st.stopWaiting()
	st.release()
}

// quietly runs f, which cleans up after a panic that is on its way to the
// caller: a panic of f's own (the same faulty store, observer) must not
// replace it.
func quietly(f func()) {
	defer func() { _ = recover() }()
	f()
}

// nextOwner is the token of st's next claim: the one minted with its key
// (callState.mint), then a new one for each claim after a wait.
func (st *state) nextOwner() idemstore.Token {
	if o := st.owner; o != (idemstore.Token{}) {
		st.owner = idemstore.Token{}
		return o
	}
	return st.g.token()
}

// ev reports an outcome that ends the call (takeover and override, which
// precede the run, are never final).
func (st *state) ev(o Outcome, fence uint64, err error) {
	final := o != OutcomeTakeover && o != OutcomeOverride
	if final {
		capture(st.ctx, o)
	}
	st.emit(o, fence, err, final)
}

// note reports an outcome on the way to another: a store error before a
// fail-open run or a failure, a heartbeat's findings.
func (st *state) note(o Outcome, fence uint64, err error) { st.emit(o, fence, err, false) }

func (st *state) emit(o Outcome, fence uint64, err error, final bool) {
	if st.g.obs != nil {
		st.g.observe(st.ctx, Event{Func: st.spec.Name, Outcome: o, Key: st.key, Fence: fence, Duration: st.g.now().Sub(st.start), Err: err,
			Entity: st.order.Key, Reason: st.reason, Final: final})
	}
}

func (st *state) waitCtx(ctx context.Context) context.Context {
	if st.wait == nil {
		st.wait, st.cancel = context.WithTimeout(ctx, st.spec.wait())
	}
	return st.wait
}

func (st *state) stopWaiting() {
	if st.cancel != nil {
		st.cancel()
	}
}

func (st *state) inProgress(leaseUntil time.Time, fence uint64) error {
	st.ev(OutcomeInProgress, fence, nil)
	return &InProgressError{Key: st.key, LeaseUntil: leaseUntil}
}

// decodeFailure returns the recorded failure in r: a *RecordedError, or
// an error matching ErrFunctionMismatch or ErrCorruptRecord when the
// record is not this function's to replay.
func decodeFailure(g *Guard, spec *Spec, key string, r idemstore.Result) error {
	body, err := g.openRecord(spec, key, r.Data)
	if err != nil {
		return fmt.Errorf("%s: recorded failure: %w", spec.Name, err)
	}
	if rec, ok := r.Value.(*RecordedError); ok {
		return rec
	}
	var fr failureRecord
	if err := json.Unmarshal(body, &fr); err != nil {
		return &RecordedError{Func: spec.Name, Message: "undecodable recorded failure: " + err.Error()}
	}
	return &RecordedError{Func: spec.Name, Message: fr.Message, Cause: causeOf(fr.Cause)}
}

func decodeResult[R any](g *Guard, spec *Spec, key string, r idemstore.Result) (R, error) {
	body, err := g.openRecord(spec, key, r.Data)
	if err != nil {
		var zero R
		return zero, fmt.Errorf("idem: %s: decoding stored result: %w", spec.Name, err)
	}
	if r.Value != nil {
		if v, ok := r.Value.(R); ok {
			return v, nil
		}
	}
	var v R
	if err := g.decodeRecord(spec, body, &v); err != nil {
		return v, fmt.Errorf("idem: %s: decoding stored result: %w", spec.Name, err)
	}
	return v, nil
}
