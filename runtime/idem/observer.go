package idem

import (
	"context"
	"strconv"
	"time"
)

// Outcome is what happened to one guarded call, or to one of its background
// steps (heartbeats). Replay rate = Replayed / (Executed + Replayed).
type Outcome uint8

const (
	// OutcomeExecuted: the function ran and its result was recorded.
	OutcomeExecuted Outcome = iota + 1
	// OutcomeFailed: the function returned an error or panicked; the key was
	// released (on_failure=unlock) or the failure recorded (on_failure=lock).
	OutcomeFailed
	// OutcomeReplayed: a duplicate got the stored result or recorded error
	// (or, in process, the running call's result).
	OutcomeReplayed
	// OutcomeInProgress: a duplicate of a running call got ErrInProgress
	// (including a wait that timed out).
	OutcomeInProgress
	// OutcomeDuplicate: on_duplicate=raise returned ErrDuplicate.
	OutcomeDuplicate
	// OutcomeMismatch: the key was reused with a different payload.
	OutcomeMismatch
	// OutcomeTakeover: this call took over a key whose owner's lease had
	// expired (reported before the function runs).
	OutcomeTakeover
	// OutcomeHeartbeatFailed: a heartbeat could not reach the store.
	OutcomeHeartbeatFailed
	// OutcomeLeaseLost: the owner lost its lease; its result was not stored.
	OutcomeLeaseLost
	// OutcomeStoreError: a store operation failed.
	OutcomeStoreError
	// OutcomeInvalidKey: the key could not be built (ErrInvalidKey), or
	// another function of the process has the name and version
	// (ErrFunctionMismatch).
	OutcomeInvalidKey
	// OutcomeFailOpen: the store was unavailable and the Guard, configured
	// to fail open, ran the function unguarded.
	OutcomeFailOpen
	// OutcomeOutOfOrder: an ordered event was rejected with ErrOutOfOrder.
	OutcomeOutOfOrder
	// OutcomeOverride: an out-of-order event was accepted because the
	// caller's ctx carried AllowOutOfOrder (Event.Reason says why).
	OutcomeOverride
	// OutcomeStepRan: a step ran and its result was recorded (Event.Step
	// names it).
	OutcomeStepRan
	// OutcomeStepReplayed: a step an earlier run of the call completed
	// returned its recorded result without running.
	OutcomeStepReplayed
)

var outcomeNames = [...]string{"", "executed", "failed", "replayed", "in_progress", "duplicate",
	"mismatch", "takeover", "heartbeat_failed", "lease_lost", "store_error", "invalid_key", "fail_open",
	"out_of_order", "override", "step_ran", "step_replayed"}

// String is the outcome's name as metrics and logs label it (executed, replayed, …).
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && o != 0 {
		return outcomeNames[o]
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// Event describes one outcome. It never carries the payload: Key is the
// hashed store key.
type Event struct {
	Func    string // Spec.Name
	Outcome Outcome
	Key     string
	Fence   uint64
	// Duration is the time from the start of the call to this outcome.
	Duration time.Duration
	Err      error
	// Entity is the hashed order key of an ordered function's call.
	Entity string
	// Reason explains an override or a rejection in words.
	Reason string
	// Final marks the outcome that ends the call: every call reports
	// exactly one final event (count calls by it). Takeover, override,
	// heartbeat findings and a store error that leads to another outcome
	// are reported with Final false.
	Final bool
	// Step names the step of a step's outcome (Step), "" for the call's.
	Step string
}

// Observer receives every outcome. It is called synchronously on the
// caller's goroutine (on the heartbeat's for heartbeat outcomes): keep it
// fast and safe for concurrent use.
//
// An observer that also has the method
//
//	ObserveContext(ctx context.Context, e Event)
//
// gets that called instead, with the caller's ctx (for heartbeat outcomes,
// the running function's), so that it can make the call's span a child of
// the caller's, log with the caller's trace ID, or attach exemplars.
type Observer interface {
	Observe(Event)
}

// contextObserver is an Observer with ObserveContext.
type contextObserver interface {
	Observer
	ObserveContext(ctx context.Context, e Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe calls f(e).
func (f ObserverFunc) Observe(e Event) { f(e) }
