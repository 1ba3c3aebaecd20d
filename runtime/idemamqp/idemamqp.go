// Package idemamqp runs a RabbitMQ (AMQP 0-9-1) consumer's handler once per
// message ID, through idemqueue, and settles each delivery by idemqueue's
// ack rules:
//
//	q := idemqueue.New(idem.NewGuard(store), idemcall.WithName("billing.credits"), idemcall.WithLease(10*time.Second))
//	c := idemamqp.New(q)
//	ch.Qos(8, 0, false)                                   // prefetch: at most 8 unacked deliveries
//	deliveries, _ := ch.Consume("credits", "", false, false, false, false, nil) // autoAck false
//	err := c.Run(ctx, deliveries, 4, func(ctx context.Context, d amqp.Delivery) error {
//		return apply(ctx, d.Body) // the side effect
//	})
//
// # Settlement
//
//   - Ran, Duplicate: Ack.
//   - Failed, transient (handler error or panic, store unavailable, another
//     delivery of the same ID still running past the wait): Nack with
//     requeue=true, after WithRequeueDelay (RabbitMQ redelivers a requeued
//     message at once, so without a delay a failing message spins). On a
//     quorum queue, whose deliveries carry x-delivery-count, WithMaxDeliveries
//     turns a message that keeps failing into a dead-letter instead.
//   - Failed, permanent (idemqueue.IsPermanent: a missing or over-long ID,
//     or an ID reused with another payload under WithPayload): Reject with
//     requeue=false, so the queue's dead-letter exchange
//     (x-dead-letter-exchange) receives it, or RabbitMQ drops it when the
//     queue has none.
//
// A message without an ID (no MessageId property, or the extractor returns
// "") never reaches the handler: it is Failed with idem.ErrInvalidKey,
// which is permanent, and is rejected to the dead-letter exchange.
//
// # RabbitMQ specifics
//
// RabbitMQ has no time-based redelivery of an unacked message: a delivery
// stays with its consumer until it is acked, nacked or rejected, or until
// the consumer's channel or connection closes (process crash, network
// failure, heartbeat timeout), when every unacked delivery of that channel
// is requeued and redelivered with Redelivered=true. The one timer is the
// broker's consumer_timeout (default 30 minutes): a delivery unacked that
// long closes the channel with PRECONDITION_FAILED, which requeues all of
// its deliveries.
//
// So the idempotency lease (idemcall.WithLease) only matters after a
// crash: the crashed consumer's connection drops, RabbitMQ redelivers at
// once, and the redelivery waits for the dead owner's lease to expire
// (idemcall.WithWait, default the lease) before taking the event over.
// Keep the lease short (seconds: it is heartbeated while the handler runs,
// so a long handler does not need a long lease) and the wait at least the
// lease, so a redelivery after a crash takes over instead of spinning
// through nack and requeue. Keep every handler well under consumer_timeout:
// a handler still running when the channel is closed has its delivery
// redelivered to another consumer, which then waits for the running one
// (Duplicate once it finishes), and this consumer's Ack then fails on the
// closed channel (reported by Handle; nothing is lost).
//
// Prefetch (Channel.Qos) bounds the deliveries a consumer holds unacked;
// Run's workers bound how many run at once. Use a prefetch of at least the
// workers (else workers idle), and not much more: every delivery in the
// prefetch buffer of a consumer that dies is redelivered.
package idemamqp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idemgen/idemgen/runtime/idemqueue"
	"github.com/idemgen/idemgen/runtime/internal/enum"
)

// Handler is the side effect of one message, run at most once per message
// ID among the consumers that share the store (ctx carries the claim's
// fence: idem.FenceFrom).
type Handler func(ctx context.Context, d amqp.Delivery) error

// Action is how a delivery was settled.
type Action uint8

const (
	// Acked: Ran or Duplicate.
	Acked Action = iota + 1
	// Requeued: Nack(requeue=true), a transient failure.
	Requeued
	// Rejected: Reject(requeue=false), a permanent failure or a message
	// past WithMaxDeliveries: dead-lettered (or dropped without a
	// dead-letter exchange).
	Rejected
)

var actionNames = [...]string{"", "ack", "requeue", "reject"}

// String is the action's name (ack, nack, reject), for logs.
func (a Action) String() string {
	return enum.Name(actionNames[:], "action", a)
}

// Outcome is what Handle did with one delivery.
type Outcome struct {
	ID     string           // the message ID the handler ran under
	Status idemqueue.Status // what idemqueue did
	Action Action           // how the delivery was settled
}

// Consumer settles RabbitMQ deliveries by idemqueue's rules. It is safe
// for concurrent use.
type Consumer struct {
	config
	q *idemqueue.Consumer
}

// Option configures New.
type Option func(*config)

// config is what the options set.
type config struct {
	id           func(amqp.Delivery) string
	payload      bool
	requeueDelay time.Duration
	maxDeliv     int64
	onOutcome    func(amqp.Delivery, Outcome, error)
}

// WithMessageID sets how the message ID is read from a delivery (default:
// the MessageId property). An ID that the producer sets once per logical
// event and repeats when it republishes is what makes a duplicate send a
// Duplicate.
func WithMessageID(f func(amqp.Delivery) string) Option {
	return func(c *config) { c.id = f }
}

// WithHeaderID reads the message ID from a string header.
func WithHeaderID(name string) Option {
	return WithMessageID(func(d amqp.Delivery) string {
		s, _ := d.Headers[name].(string)
		return s
	})
}

// WithPayload sets whether the body is fingerprinted too
// (idemqueue.ProcessPayload; off by default): a message with a processed
// ID and another body is rejected as permanent (idem.ErrPayloadMismatch)
// instead of acked as a Duplicate.
func WithPayload(on bool) Option { return func(c *config) { c.payload = on } }

// WithRequeueDelay waits this long before Nack(requeue=true) of a
// transient failure (default 100ms; 0 requeues at once), so a failing
// message does not spin. The wait holds the delivery, and so a prefetch
// slot; it ends early when the context is canceled.
func WithRequeueDelay(d time.Duration) Option {
	return func(c *config) { c.requeueDelay = max(d, 0) }
}

// WithMaxDeliveries rejects (dead-letters) instead of requeueing a
// transient failure once the delivery's x-delivery-count header (set by
// quorum queues: 0 on the first delivery) shows it was delivered n times.
// Classic queues do not count deliveries; there it has no effect. Zero
// (the default) never gives up.
func WithMaxDeliveries(n int) Option { return func(c *config) { c.maxDeliv = int64(n) } }

// WithOutcome calls f after each delivery is settled (or failed to be):
// for logs and metrics. f runs on the worker's goroutine.
func WithOutcome(f func(d amqp.Delivery, o Outcome, err error)) Option {
	return func(c *config) { c.onOutcome = f }
}

// New returns a Consumer over q.
func New(q *idemqueue.Consumer, opts ...Option) *Consumer {
	cfg := config{id: func(d amqp.Delivery) string { return d.MessageId }, requeueDelay: 100 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	return &Consumer{config: cfg, q: q}
}

// Handle processes one delivery and settles it. The error is the
// handler's or the store's (wrapped by idemqueue), or the settlement's
// when the Ack, Nack or Reject could not be sent (the channel closed: the
// broker redelivers the message, and its redelivery is a Duplicate if the
// handler ran).
func (c *Consumer) Handle(ctx context.Context, d amqp.Delivery, h Handler) (Outcome, error) {
	if h == nil {
		return Outcome{}, errors.New("idemamqp: nil handler")
	}
	id := c.id(d)
	run := func(ctx context.Context) error { return h(ctx, d) }
	var st idemqueue.Status
	var err error
	if c.payload {
		st, err = c.q.ProcessPayload(ctx, id, d.Body, run)
	} else {
		st, err = c.q.Process(ctx, id, run)
	}
	o := Outcome{ID: id, Status: st}
	var serr error
	switch {
	case st.Ack():
		o.Action = Acked
		serr = d.Ack(false)
	case idemqueue.IsPermanent(err) || c.exhausted(d):
		o.Action = Rejected
		serr = d.Reject(false)
	default:
		o.Action = Requeued
		if c.requeueDelay > 0 {
			t := time.NewTimer(c.requeueDelay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		serr = d.Nack(false, true)
	}
	if serr != nil {
		serr = fmt.Errorf("idemamqp: %s of message %q (delivery tag %d): %w", o.Action, id, d.DeliveryTag, serr)
		err = errors.Join(err, serr)
	}
	if c.onOutcome != nil {
		c.onOutcome(d, o, err)
	}
	return o, err
}

// exhausted reports whether a quorum queue delivery reached
// WithMaxDeliveries.
func (c *Consumer) exhausted(d amqp.Delivery) bool {
	if c.maxDeliv <= 0 {
		return false
	}
	var n int64
	switch v := d.Headers["x-delivery-count"].(type) {
	case int64:
		n = v
	case int32:
		n = int64(v)
	case int:
		n = int64(v)
	default:
		return false
	}
	return n+1 >= c.maxDeliv
}

// Run hands deliveries to workers goroutines (at least 1), each calling
// Handle, until deliveries is closed (the channel or connection closed)
// or ctx is done; then it waits for the running handlers and returns.
// A handler is not canceled when ctx is: it runs with
// context.WithoutCancel(ctx), so a shutdown does not leave an effect half
// done (bound the handler's own time if it can hang). Deliveries still in
// the prefetch buffer at shutdown stay unacked; RabbitMQ redelivers them
// when the channel closes. Run returns ctx.Err() after a cancellation and
// nil when deliveries was closed; outcomes and settlement errors go to
// WithOutcome.
func (c *Consumer) Run(ctx context.Context, deliveries <-chan amqp.Delivery, workers int, h Handler) error {
	if h == nil {
		return errors.New("idemamqp: nil handler")
	}
	workers = max(workers, 1)
	work := make(chan amqp.Delivery)
	var wg sync.WaitGroup
	hctx := context.WithoutCancel(ctx)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range work {
				c.Handle(hctx, d, h) //nolint:errcheck // reported to WithOutcome
			}
		}()
	}
	defer wg.Wait()
	defer close(work)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case d, ok := <-deliveries:
			if !ok {
				return nil
			}
			select {
			case work <- d:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}
