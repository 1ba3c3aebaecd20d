// Package idemaudit records an audit trail of guarded calls: one Entry per
// attempt (executed, replayed, rejected as a duplicate, payload mismatch,
// out of order, failed, …) plus one for every administrator's override of
// the ordering check.
//
// Wire it as the Guard's observer and give it a Sink:
//
//	w, _ := pgaudit.New(ctx, pool)                   // a Postgres table
//	g := idem.NewGuard(store, idem.WithObserver(idemaudit.New(w)))
//	defer w.Close(ctx)
//
// or idemaudit.NewSlogSink(logger) for a structured log. To audit and
// observe (metrics, logs) at once, combine observers with idemobs.
//
// An Entry holds the function's name, the entity and key as hashes (the
// runtime never sees the arguments, only the SHA-256 — or HMAC — of their
// key material), the action, a reason, the fence and the time. The raw
// payload is never recorded unless the caller opts in per call with
// WithPayload, which attaches bytes the caller chooses (a redacted copy,
// an event ID) to the call's ctx.
//
// Sinks must not block the caller: the observer runs on the caller's
// goroutine. pgaudit queues entries and writes them in batches, dropping
// (and counting) entries when its queue is full.
package idemaudit

import (
	"context"
	"strings"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
)

// Action is what happened to one attempt, as recorded in the trail. The
// values are stable strings: they are stored in tables and logs.
type Action string

const (
	Executed    Action = "executed"           // the function ran and its result was recorded
	Replayed    Action = "replayed"           // a duplicate got the stored result (or recorded error)
	Duplicate   Action = "rejected_duplicate" // on_duplicate=raise rejected a duplicate
	InProgress  Action = "in_progress"        // a duplicate of a running call was turned away
	Mismatch    Action = "mismatch"           // the key was reused with another payload
	OutOfOrder  Action = "out_of_order"       // an ordered event older than its entity's last (minus grace)
	Failed      Action = "failed"             // the function returned an error or panicked
	Override    Action = "override"           // an administrator accepted an out-of-order event
	LeaseLost   Action = "lease_lost"         // the owner lost its lease; the result was not stored
	StoreError  Action = "store_error"        // the store failed; the function did not run
	InvalidKey  Action = "invalid_key"        // the key could not be built
	FailOpen    Action = "fail_open"          // the store was down and the Guard ran the function unguarded
	OtherAction Action = "other"              // an outcome this version does not know
)

// ActionOf maps a Guard outcome to its audit action.
func ActionOf(o idem.Outcome) Action {
	switch o {
	case idem.OutcomeExecuted:
		return Executed
	case idem.OutcomeReplayed:
		return Replayed
	case idem.OutcomeDuplicate:
		return Duplicate
	case idem.OutcomeInProgress:
		return InProgress
	case idem.OutcomeMismatch:
		return Mismatch
	case idem.OutcomeOutOfOrder:
		return OutOfOrder
	case idem.OutcomeFailed:
		return Failed
	case idem.OutcomeOverride:
		return Override
	case idem.OutcomeLeaseLost:
		return LeaseLost
	case idem.OutcomeStoreError:
		return StoreError
	case idem.OutcomeInvalidKey:
		return InvalidKey
	case idem.OutcomeFailOpen:
		return FailOpen
	}
	return OtherAction
}

// Entry is one line of the audit trail.
type Entry struct {
	Time time.Time
	Func string // Spec.Name
	// Entity is the hex hash of an ordered call's entity ("" otherwise).
	Entity string
	// KeyHash is the hex hash of the call's key (the last part of its
	// store key).
	KeyHash string
	Action  Action
	// Reason: the override's reason, the ordering error, the failure.
	Reason string
	Fence  uint64
	// Payload is whatever the caller attached with WithPayload; nil
	// unless it opted in.
	Payload []byte
}

// Sink stores entries. Record is called on the caller's goroutine for
// every entry: it must be safe for concurrent use and must not block.
type Sink interface {
	Record(ctx context.Context, e Entry)
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(ctx context.Context, e Entry)

// Record calls f.
func (f SinkFunc) Record(ctx context.Context, e Entry) { f(ctx, e) }

type payloadKey struct{}

// WithPayload opts one call into recording p in its audit entries. The
// runtime never sees a call's arguments: p is whatever the caller decides
// is fit for the audit table (redact it first).
func WithPayload(ctx context.Context, p []byte) context.Context {
	return context.WithValue(ctx, payloadKey{}, p)
}

// Observer turns Guard events into audit entries: every call's final
// event (one per attempt) and every override. Other intermediate events
// (takeovers, heartbeats) are not attempts and are left to metrics.
type Observer struct {
	sink Sink
	now  func() time.Time
}

// Option configures New.
type Option func(*config)

// config is what the options set.
type config struct {
	now func() time.Time
}

// WithClock sets the clock that stamps entries (default time.Now, also
// for a nil now).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// New returns an observer recording into sink.
func New(sink Sink, opts ...Option) *Observer {
	c := config{now: time.Now}
	for _, f := range opts {
		f(&c)
	}
	if c.now == nil {
		c.now = time.Now
	}
	return &Observer{sink: sink, now: c.now}
}

// Observe records e without a ctx (no opted-in payload).
func (o *Observer) Observe(e idem.Event) { o.ObserveContext(context.Background(), e) }

// ObserveContext records e; the Guard calls it with the caller's ctx.
func (o *Observer) ObserveContext(ctx context.Context, e idem.Event) {
	if !e.Final && e.Outcome != idem.OutcomeOverride {
		return
	}
	en := Entry{
		Time:    o.now(),
		Func:    e.Func,
		Entity:  hashOf(e.Entity),
		KeyHash: keyHash(e.Key),
		Action:  ActionOf(e.Outcome),
		Reason:  e.Reason,
		Fence:   e.Fence,
	}
	if en.Reason == "" && e.Err != nil && e.Outcome != idem.OutcomeExecuted && e.Outcome != idem.OutcomeReplayed {
		en.Reason = e.Err.Error()
	}
	if e.Outcome == idem.OutcomeReplayed && e.Err != nil {
		en.Reason = "replayed recorded error: " + e.Err.Error()
	}
	if p, ok := ctx.Value(payloadKey{}).([]byte); ok {
		en.Payload = p
	}
	o.sink.Record(ctx, en)
}

// keyHash is the last ':'-separated part of a store key: the hash.
func keyHash(key string) string {
	if i := strings.LastIndexByte(key, ':'); i >= 0 {
		return key[i+1:]
	}
	return key
}

// hashOf extracts the entity hash from an order key ("…:{hash}").
func hashOf(orderKey string) string {
	i := strings.LastIndexByte(orderKey, '{')
	j := strings.LastIndexByte(orderKey, '}')
	if i >= 0 && j > i {
		return orderKey[i+1 : j]
	}
	return orderKey
}

var (
	_ interface {
		idem.Observer
		ObserveContext(context.Context, idem.Event)
	} = (*Observer)(nil)
)
