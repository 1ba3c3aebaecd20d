// Package idemqueue runs the handler of an at-least-once message once per
// event ID: the consumer side of a queue (Kafka, NATS JetStream, SQS,
// RabbitMQ) whose broker redelivers a message until it is acknowledged.
//
//	c := idemqueue.New(idem.NewGuard(store), idemcall.WithName("billing.events"))
//	for msg := range messages {
//		status, err := c.Process(ctx, msg.ID, func(ctx context.Context) error {
//			return apply(ctx, msg) // the side effect
//		})
//		switch {
//		case status.Ack():
//			msg.Ack() // Ran or Duplicate
//		case idemqueue.IsPermanent(err):
//			msg.Term() // invalid ID or ID reused with another payload: dead-letter it
//		default:
//			msg.Nak() // Failed: let the broker redeliver
//		}
//	}
//
// # Ack rules
//
//   - Ran: the handler ran now and returned nil. Ack. (err is non-nil only
//     when the store could not record the outcome after the handler ran;
//     ack anyway: the effect has happened.)
//   - Duplicate: the event was processed before (by this consumer or any
//     other sharing the store), or by a concurrent delivery that finished
//     while this one waited. The handler did not run. Ack, so the broker
//     stops redelivering it.
//   - Failed: the handler returned an error or panicked (a *PanicError;
//     the key is released, so the redelivery runs the handler again), the store was
//     unavailable (the handler did not run), or another delivery of the
//     event was still running when the wait ran out (errors.Is(err,
//     idem.ErrInProgress)). Do not ack: negative-acknowledge or let the ack
//     deadline pass, and the broker redelivers.
//
// Failed with idem.ErrInvalidKey (empty event ID, or longer than 255 bytes)
// or idem.ErrPayloadMismatch (ProcessPayload with an event ID already
// processed with another payload) will fail on every redelivery:
// IsPermanent reports them, and the message belongs in a dead-letter queue.
//
// # Crashes
//
// A consumer that dies while its handler runs holds the event's lease
// until it expires (idemcall.WithLease, default 30s): a redelivery that arrives
// earlier waits (up to idemcall.WithWait) and then takes the event over, with a
// higher fence (idem.FenceFrom(ctx) in the handler). A consumer that dies
// after the handler and before the ack leaves a recorded event: its
// redelivery is a Duplicate and is acked. A consumer that dies between the
// handler's side effect and the store's record of it cannot be told apart
// from one that died before the effect; make that window harmless by
// writing the effect and the record in one transaction (pgstore's
// completion in the caller's transaction) or by guarding the effect with
// the fence.
package idemqueue

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemcall"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/internal/enum"
)

// Status is what Process did with an event.
type Status uint8

const (
	// Ran: the handler ran and returned nil. Ack.
	Ran Status = iota + 1
	// Duplicate: the event had been processed; the handler did not run. Ack.
	Duplicate
	// Failed: the handler failed, or could not be run now. Do not ack.
	Failed
)

var statusNames = [...]string{"", "ran", "duplicate", "failed"}

// String is the status's name (ran, duplicate, failed), for logs.
func (s Status) String() string {
	return enum.Name(statusNames[:], "status", s)
}

// Ack reports whether the message should be acknowledged: Ran or Duplicate.
func (s Status) Ack() bool { return s == Ran || s == Duplicate }

// IsPermanent reports whether a Failed outcome will fail again on every
// redelivery (an invalid event ID, or an ID reused with another payload),
// so that the message should be dead-lettered rather than redelivered.
func IsPermanent(err error) bool {
	return errors.Is(err, idem.ErrInvalidKey) || errors.Is(err, idem.ErrPayloadMismatch)
}

// DefaultName is the key space of a Consumer without idemcall.WithName.
const DefaultName = "idemqueue"

// Consumer processes events once per event ID. It is safe for concurrent
// use; make one per logical consumer (per key space) and share it.
type Consumer struct {
	g    *idem.Guard
	spec idem.Spec
}

// New returns a Consumer over g. The options set the key space and the
// timing of every event's call (idemcall.WithName, WithVersion, WithTTL,
// WithLease, WithWait); by default a delivery waits up to the lease for a
// concurrent delivery of its event. An argument the options cannot use (a
// TTL or lease that is not positive, an empty name) leaves that setting at
// its default.
func New(g *idem.Guard, opts ...idemcall.Option) *Consumer {
	spec, _ := idemcall.Spec(idem.Spec{Name: DefaultName, OnDuplicate: idem.DuplicateWait}, opts...)
	spec.OnFailure = idem.FailureUnlock
	if spec.Name == "" {
		spec.Name = DefaultName
	}
	return &Consumer{g: g, spec: spec}
}

// done is the recorded value of a processed event.
type done struct{}

// Process runs handler unless the event eventID was processed already.
// The handler's ctx carries the claim's fence (idem.FenceFrom) and is
// canceled with cause idem.ErrLeaseLost if the lease is lost while it runs.
// See the package doc for what to do with each Status.
func (c *Consumer) Process(ctx context.Context, eventID string, handler func(context.Context) error) (Status, error) {
	return c.processSpec(ctx, &c.spec, eventID, nil, false, handler)
}

// ProcessPayload is Process that also fingerprints the message payload: a
// later event with the same ID and a different payload is Failed with
// idem.ErrPayloadMismatch instead of being a Duplicate (a producer bug, or
// an ID collision).
func (c *Consumer) ProcessPayload(ctx context.Context, eventID string, payload []byte, handler func(context.Context) error) (Status, error) {
	return c.processSpec(ctx, &c.spec, eventID, payload, true, handler)
}

func (c *Consumer) processSpec(ctx context.Context, spec *idem.Spec, eventID string, payload []byte, withPayload bool, handler func(context.Context) error) (Status, error) {
	if handler == nil {
		return Failed, errors.New("idemqueue: nil handler")
	}
	call, k := idemimpl.Begin(c.g, spec)
	k.Key().ID(eventID)
	if withPayload {
		p := k.Payload()
		p.String(eventID)
		if payload == nil {
			p.Nil()
		} else {
			p.Bytes(payload)
		}
	}
	var ran bool
	var herr error
	_, err := doRecover(ctx, call, &herr, func(ctx context.Context) (done, error) {
		ran = true
		defer func() {
			if p := recover(); p != nil {
				// Do re-panics after releasing the key; the panic is
				// turned into Failed below.
				herr = &PanicError{Value: p, Stack: debug.Stack()}
				panic(p)
			}
		}()
		herr = handler(ctx)
		return done{}, herr
	})
	switch {
	case err == nil && ran:
		return Ran, nil
	case err == nil:
		return Duplicate, nil
	case ran && herr == nil && errors.Is(err, idem.ErrStoreUnavailable):
		// The handler succeeded but its outcome could not be recorded:
		// the effect happened, so the message is acked.
		return Ran, fmt.Errorf("idemqueue: event %q: %w", eventID, err)
	default:
		return Failed, fmt.Errorf("idemqueue: event %q: %w", eventID, err)
	}
}

// PanicError is the error of a handler that panicked: the key was released
// and the status is Failed, so the message is redelivered.
type PanicError struct {
	Value any
	Stack []byte
}

// Error says the handler panicked, with the panic's value.
func (e *PanicError) Error() string { return fmt.Sprintf("handler panicked: %v", e.Value) }

// doRecover calls idem.Do and turns the panic it re-raises into an error.
func doRecover(ctx context.Context, call idem.Call, herr *error, fn func(context.Context) (done, error)) (_ done, err error) {
	defer func() {
		if p := recover(); p != nil {
			if pe, ok := (*herr).(*PanicError); ok {
				err = pe
				return
			}
			err = &PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	return idem.Do(ctx, call, fn)
}

var defaultSpec = idem.Spec{Name: DefaultName, OnDuplicate: idem.DuplicateWait}

// Process runs handler once per eventID with g and the default settings
// (key space "idemqueue", TTL 24h, lease 30s, wait for a concurrent
// delivery up to the lease). New(g, opts...).Process configures them.
func Process(ctx context.Context, g *idem.Guard, eventID string, handler func(context.Context) error) (Status, error) {
	c := Consumer{g: g}
	return c.processSpec(ctx, &defaultSpec, eventID, nil, false, handler)
}
