package idem

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// ErrStep is wrapped by the errors of a Step that cannot run as a
// recovery point: outside a guarded call (with the ctx of a call that has
// returned, too), a name used twice in one call, a name the store cannot
// hold (not valid UTF-8, or past the store's limit), or a store that keeps
// no steps. The step's function does not run.
var ErrStep = errors.New("idem: step")

// stepNamer is implemented by stores that cannot hold every step name: a
// field path or map key with a length limit. CheckStepName returns why
// the store cannot record a step of that name, or nil.
type stepNamer interface {
	CheckStepName(name string) error
}

// checkStepName refuses, before the step's function runs, a name the
// store could not record: so the step never runs only to fail to be
// recorded, and then runs again on every retry. Names must be valid
// UTF-8 on every store: stores that send names as text (DynamoDB,
// Firestore) would turn invalid bytes into U+FFFD, making two names one.
func checkStepName(store idemstore.Store, name string) error {
	if !utf8.ValidString(name) {
		return errors.New("the name is not valid UTF-8")
	}
	if n, ok := store.(stepNamer); ok {
		return n.CheckStepName(name)
	}
	return nil
}

// steps is a running call's recovery points: the steps its record held
// when it was claimed, and the names used so far in this execution.
type steps struct {
	mu       sync.Mutex
	recorded map[string][]byte
	used     map[string]bool
}

// stepState returns the call's steps, made on first use.
func (r *running) stepState() *steps {
	if s := r.steps.Load(); s != nil {
		return s
	}
	r.steps.CompareAndSwap(nil, new(steps))
	return r.steps.Load()
}

// use marks name used and returns its recorded data, if any.
func (s *steps) use(name string) (data []byte, recorded, again bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used[name] {
		return nil, false, true
	}
	if s.used == nil {
		s.used = make(map[string]bool)
	}
	s.used[name] = true
	data, recorded = s.recorded[name]
	return data, recorded, false
}

// Step runs fn at most once per call key as the step name of the guarded
// call running with ctx, and records its result under the call's record.
// When the call is run again after its owner died or gave the key back (a
// takeover, a retry after a released failure), a step the earlier owner
// completed returns its recorded result without running; only a step that
// was in flight can run again (give it StepKey as the downstream
// idempotency key, so that run is deduplicated too).
//
// fn's error is returned as it is and nothing is recorded: the step runs
// again when the call does. A result that cannot be recorded because the
// lease was lost is returned with an error wrapping ErrLeaseLost, and the
// call's ctx is canceled with that cause; once it is, a step does not run
// and returns that error. Results are encoded by the
// Guard's codec (WithCodec, JSON by default). Step is safe for concurrent
// use by the goroutines of one call, with distinct names.
func Step[T any](ctx context.Context, name string, fn func(context.Context) (T, error)) (T, error) {
	return StepWith(ctx, name, nil, fn)
}

// StepWith is Step with the codec of T (nil: the Guard's). idemgen's step
// wrappers (//idem:step) pass T's generated codec.
func StepWith[T any](ctx context.Context, name string, codec Codec, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	r, ok := ctx.Value(leaseKey{}).(*running)
	if !ok {
		return zero, fmt.Errorf("%w %q: not inside a guarded call (call it from the function a wrapper or Do runs, with its ctx)", ErrStep, name)
	}
	g, spec := r.codec.g, r.codec.spec
	if r.ctx.ended.Load() {
		// A goroutine the function left running: its call returned, and
		// whatever the step did would be recorded under no lease.
		return zero, fmt.Errorf("%w %q of %s: not inside a guarded call: the call returned", ErrStep, name, spec.Name)
	}
	if k := r.ctx.cancelable(false); k != nil && errors.Is(context.Cause(k.ctx), ErrLeaseLost) {
		// Another owner may be running the call, and this step, now.
		return zero, fmt.Errorf("%s: step %q not run: %w (fence %d)", spec.Name, name, ErrLeaseLost, r.lease.Fence)
	}
	stepper, ok := g.store.(idemstore.Stepper)
	if !ok {
		return zero, fmt.Errorf("%w %q of %s: the store %T keeps no steps", ErrStep, name, spec.Name, g.store)
	}
	if err := checkStepName(g.store, name); err != nil {
		return zero, fmt.Errorf("%w %.64q of %s: %w", ErrStep, name, spec.Name, err)
	}
	data, recorded, again := r.stepState().use(name)
	if again {
		return zero, fmt.Errorf("%w %q of %s: the name is used twice in one call", ErrStep, name, spec.Name)
	}
	if codec == nil {
		codec = g.codec
	}
	if recorded {
		return replayStep[T](ctx, r, name, codec, data)
	}
	v, err := fn(ctx)
	if err != nil {
		return v, err
	}
	return v, saveStep(ctx, r, stepper, name, codec, &v)
}

// replayStep decodes a step the call's record held.
func replayStep[T any](ctx context.Context, r *running, name string, codec Codec, data []byte) (T, error) {
	var v T
	spec := r.codec.spec
	body, err := r.codec.g.openRecord(spec, r.lease.Key, data)
	if err == nil {
		err = codec.Unmarshal(body, &v)
	}
	if err != nil {
		err = fmt.Errorf("idem: %s: step %q: decoding its record: %w: %w", spec.Name, name, ErrCorruptRecord, err)
		r.event(ctx, OutcomeStoreError, name, err)
		return v, err
	}
	r.event(ctx, OutcomeStepReplayed, name, nil)
	return v, nil
}

// saveStep records v as the step name's result under the call's lease.
func saveStep(ctx context.Context, r *running, stepper idemstore.Stepper, name string, codec Codec, v any) error {
	g, spec := r.codec.g, r.codec.spec
	body, err := codec.Marshal(v)
	if err != nil {
		err = fmt.Errorf("%s: step %q: %w: %w", spec.Name, name, ErrResultNotEncodable, err)
		r.event(ctx, OutcomeStoreError, name, err)
		return err
	}
	rec := append(appendHeader(make([]byte, 0, len(body)+64), spec), body...)
	if err := g.overBudget(spec, len(rec)); err != nil {
		err = fmt.Errorf("step %q: %w", name, err)
		r.event(ctx, OutcomeStoreError, name, err)
		return err
	}
	data, err := g.sealRecord(spec, r.lease.Key, rec)
	if err != nil {
		r.event(ctx, OutcomeStoreError, name, err)
		return err
	}
	wctx, cancel := g.writeCtx(ctx, r.lease)
	defer cancel()
	err = stepper.SaveStep(wctx, r.lease, name, data)
	switch {
	case err == nil:
		r.event(ctx, OutcomeStepRan, name, nil)
		return nil
	case errors.Is(err, ErrLeaseLost):
		err = fmt.Errorf("%s: step %q ran, %w (fence %d): its result is not recorded", spec.Name, name, ErrLeaseLost, r.lease.Fence)
		r.event(ctx, OutcomeLeaseLost, name, err)
		r.ctx.cancel(ErrLeaseLost)
		return err
	case errors.Is(err, ErrResultTooLarge):
		err = fmt.Errorf("%s: step %q: %w", spec.Name, name, err)
	default:
		err = fmt.Errorf("%s: step %q: recording its result: %w", spec.Name, name, unavailable("", err))
	}
	r.event(ctx, OutcomeStoreError, name, err)
	return err
}

// StepKey returns a key for the step name of the guarded call running
// with ctx: the same for every run of the call (after a takeover too) and
// for no other call or step, and independent of the store. Pass it as the
// idempotency key of the step's downstream call (a payment API's
// Idempotency-Key, a queue's deduplication ID), so that a step in flight
// when its owner died is deduplicated downstream when it runs again.
func StepKey(ctx context.Context, name string) (string, error) {
	r, ok := ctx.Value(leaseKey{}).(*running)
	if !ok {
		return "", fmt.Errorf("%w %q: StepKey outside a guarded call", ErrStep, name)
	}
	h := sha256.New()
	h.Write([]byte("idem step\x00"))
	h.Write([]byte(r.lease.Key))
	h.Write([]byte{0})
	h.Write([]byte(name))
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// event reports a step's outcome (never final: the call reports its own).
func (r *running) event(ctx context.Context, o Outcome, step string, err error) {
	g, spec := r.codec.g, r.codec.spec
	if g.obs == nil && g.cobs == nil {
		return
	}
	g.observe(ctx, Event{Func: spec.Name, Outcome: o, Key: r.lease.Key, Fence: r.lease.Fence, Err: err, Step: step})
}
