// Package idemsqs runs an Amazon SQS consumer's handler once per message
// ID, through idemqueue, with the AWS SDK for Go v2:
//
//	q := idemqueue.New(idem.NewGuard(store), idemcall.WithName("billing.credits"), idemcall.WithLease(10*time.Second))
//	c := idemsqs.New(sqs.NewFromConfig(cfg), queueURL, q, idemsqs.WithAttributeID("event-id"))
//	err := c.Run(ctx, 4, func(ctx context.Context, m types.Message) error {
//		return apply(ctx, *m.Body) // the side effect
//	})
//
// # Settlement
//
//   - Ran, Duplicate: DeleteMessage.
//   - Failed, transient (handler error or panic, store unavailable, another
//     delivery of the same ID still running past the wait): the message is
//     left in flight; SQS makes it visible again when its visibility
//     timeout ends, and redelivers it. WithRetryVisibility sets that
//     timeout instead (0: redeliver at once).
//   - Failed, permanent (idemqueue.IsPermanent: a missing ID, or an ID
//     reused with another payload under WithPayload): with
//     WithDeadLetterQueue, the message is copied to that queue and deleted;
//     without, it is made visible at once, so that the source queue's
//     redrive policy (RedrivePolicy {"deadLetterTargetArn": …,
//     "maxReceiveCount": n}) moves it to the dead-letter queue after n
//     receives. A queue without either redelivers it forever.
//
// # Message IDs
//
// SQS's MessageId is assigned per SendMessage: stable across redeliveries
// of one send, but a producer that sends the same logical event twice (a
// retry after a timeout) gets two MessageIds, and both run the handler.
// The default ID is the MessageId; prefer an ID the producer sets once per
// event: a message attribute (WithAttributeID), or a body field
// (WithMessageID). On FIFO queues, MessageDeduplicationId dedups sends
// within 5 minutes only; the idempotency record (idemcall.WithTTL) covers
// longer.
//
// # Visibility timeout and the heartbeat
//
// SQS redelivers a received message when its visibility timeout ends,
// whether or not its handler is still running. While Handle processes a
// message (the handler runs, or waits for a concurrent delivery of the same
// ID) a heartbeat extends the visibility timeout to WithVisibility (default
// 30s) every third of it, with ChangeMessageVisibility, so a long handler
// is not redelivered under it. If the consumer dies, the heartbeat stops
// and the message is redelivered within WithVisibility; the redelivery
// waits for the dead owner's idempotency lease (idemcall.WithLease) and
// takes the event over. Keep the queue's own VisibilityTimeout at least
// the time to the first heartbeat (WithVisibility/3) plus a receive, and
// the idemqueue wait (idemcall.WithWait) below WithVisibility.
package idemsqs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idemgen/idemgen/runtime/idemqueue"
	"github.com/idemgen/idemgen/runtime/internal/enum"
)

// API is the part of *sqs.Client the Consumer uses.
type API interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Handler is the side effect of one message, run at most once per message
// ID among the consumers that share the store.
type Handler func(ctx context.Context, m types.Message) error

// Action is what was done with a message.
type Action uint8

const (
	// Deleted: Ran or Duplicate.
	Deleted Action = iota + 1
	// Left: a transient failure; redelivered after the visibility timeout
	// (or WithRetryVisibility).
	Left
	// DeadLettered: a permanent failure, copied to WithDeadLetterQueue and
	// deleted.
	DeadLettered
	// Released: a permanent failure without WithDeadLetterQueue, made
	// visible at once for the queue's redrive policy.
	Released
)

var actionNames = [...]string{"", "delete", "leave", "dead-letter", "release"}

// String is the action's name, for logs.
func (a Action) String() string {
	return enum.Name(actionNames[:], "action", a)
}

// Outcome is what Handle did with one message.
type Outcome struct {
	ID         string           // the message ID the handler ran under
	Status     idemqueue.Status // what idemqueue did
	Action     Action           // what was done with the message
	Heartbeats int              // visibility extensions sent while it ran
}

// Consumer receives and settles SQS messages by idemqueue's rules. It is
// safe for concurrent use.
type Consumer struct {
	config
	api      API
	queueURL string
	q        *idemqueue.Consumer
}

// Option configures New.
type Option func(*config)

// config is what the options set.
type config struct {
	id         func(types.Message) string
	payload    bool
	visibility time.Duration
	retryVis   time.Duration
	dlq        string
	waitTime   int32
	batch      int32
	onOutcome  func(types.Message, Outcome, error)
	onError    func(error)
}

// WithMessageID sets how the message ID is read (default: the MessageId).
func WithMessageID(f func(types.Message) string) Option { return func(c *config) { c.id = f } }

// WithAttributeID reads the message ID from a String message attribute the
// producer sets once per logical event (the recommended ID).
func WithAttributeID(name string) Option {
	return func(c *config) {
		c.id = func(m types.Message) string {
			if v, ok := m.MessageAttributes[name]; ok && v.StringValue != nil {
				return *v.StringValue
			}
			return ""
		}
	}
}

// WithPayload sets whether the body is fingerprinted too
// (idemqueue.ProcessPayload; off by default): a message with a processed
// ID and another body is a permanent failure.
func WithPayload(on bool) Option { return func(c *config) { c.payload = on } }

// WithVisibility sets the visibility timeout the heartbeat keeps
// extending while a message is processed (default 30s, whole seconds, at
// most 12h), every third of it. Zero or less turns the heartbeat off: the
// queue's own timeout then bounds a handler.
func WithVisibility(d time.Duration) Option { return func(c *config) { c.visibility = d } }

// WithRetryVisibility sets the visibility timeout of a transiently failed
// message: the delay before its redelivery (0: at once). Default: left as
// the last heartbeat (or the receive) set it.
func WithRetryVisibility(d time.Duration) Option {
	return func(c *config) { c.retryVis = max(d, 0) }
}

// WithDeadLetterQueue sends a permanently failed message (body and
// message attributes) to this queue URL and deletes it.
func WithDeadLetterQueue(url string) Option { return func(c *config) { c.dlq = url } }

// WithReceive sets Run's long-poll wait (seconds, default 20) and the most
// messages one ReceiveMessage returns (1 to 10, default 10; Run never asks
// for more than it has free workers).
func WithReceive(waitSeconds, maxMessages int) Option {
	return func(c *config) {
		c.waitTime = int32(min(max(waitSeconds, 0), 20))
		c.batch = int32(min(max(maxMessages, 1), 10))
	}
}

// WithOutcome calls f after each message is settled (or failed to be).
func WithOutcome(f func(m types.Message, o Outcome, err error)) Option {
	return func(c *config) { c.onOutcome = f }
}

// WithErrorHandler receives Run's ReceiveMessage errors (Run retries after
// a second).
func WithErrorHandler(f func(error)) Option { return func(c *config) { c.onError = f } }

// New returns a Consumer of the queue at queueURL over q.
func New(api API, queueURL string, q *idemqueue.Consumer, opts ...Option) *Consumer {
	cfg := config{visibility: 30 * time.Second, retryVis: -1, waitTime: 20, batch: 10,
		id: func(m types.Message) string { return aws.ToString(m.MessageId) }}
	for _, o := range opts {
		o(&cfg)
	}
	return &Consumer{config: cfg, api: api, queueURL: queueURL, q: q}
}

func seconds(d time.Duration) int32 {
	s := (d + time.Second - 1) / time.Second
	return int32(min(max(s, 0), 43200))
}

// Handle processes one received message and settles it. The error is the
// handler's or the store's (wrapped by idemqueue), joined with the
// settlement's (a DeleteMessage that failed: the message is redelivered,
// and is a Duplicate then if the handler ran).
func (c *Consumer) Handle(ctx context.Context, m types.Message, h Handler) (Outcome, error) {
	if h == nil {
		return Outcome{}, errors.New("idemsqs: nil handler")
	}
	id := c.id(m)
	hb := c.heartbeat(ctx, m)
	run := func(ctx context.Context) error { return h(ctx, m) }
	var st idemqueue.Status
	var err error
	if c.payload {
		st, err = c.q.ProcessPayload(ctx, id, []byte(aws.ToString(m.Body)), run)
	} else {
		st, err = c.q.Process(ctx, id, run)
	}
	beats := hb()
	o := Outcome{ID: id, Status: st, Heartbeats: beats}
	// Settlement runs even when ctx was canceled meanwhile: the handler
	// has run (or not) and the broker should know.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var serr error
	switch {
	case st.Ack():
		o.Action = Deleted
		_, serr = c.api.DeleteMessage(sctx, &sqs.DeleteMessageInput{QueueUrl: &c.queueURL, ReceiptHandle: m.ReceiptHandle})
	case idemqueue.IsPermanent(err) && c.dlq != "":
		o.Action = DeadLettered
		_, serr = c.api.SendMessage(sctx, &sqs.SendMessageInput{QueueUrl: &c.dlq, MessageBody: m.Body, MessageAttributes: m.MessageAttributes})
		if serr == nil {
			_, serr = c.api.DeleteMessage(sctx, &sqs.DeleteMessageInput{QueueUrl: &c.queueURL, ReceiptHandle: m.ReceiptHandle})
		}
	case idemqueue.IsPermanent(err):
		o.Action = Released
		serr = c.setVisibility(sctx, m, 0)
	default:
		o.Action = Left
		if c.retryVis >= 0 {
			serr = c.setVisibility(sctx, m, c.retryVis)
		}
	}
	if serr != nil {
		serr = fmt.Errorf("idemsqs: %s of message %q: %w", o.Action, id, serr)
		err = errors.Join(err, serr)
	}
	if c.onOutcome != nil {
		c.onOutcome(m, o, err)
	}
	return o, err
}

func (c *Consumer) setVisibility(ctx context.Context, m types.Message, d time.Duration) error {
	_, err := c.api.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: &c.queueURL, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: seconds(d)})
	return err
}

// heartbeat extends m's visibility every third of WithVisibility until the
// returned stop is called; stop waits for it and returns the number of
// extensions that succeeded.
func (c *Consumer) heartbeat(ctx context.Context, m types.Message) (stop func() int) {
	if c.visibility <= 0 {
		return func() int { return 0 }
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	beats := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(c.visibility / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.visibility/3)
				err := c.setVisibility(bctx, m, c.visibility)
				cancel()
				if err == nil {
					beats++
				} else if c.onError != nil {
					c.onError(fmt.Errorf("idemsqs: heartbeat of message %s: %w", aws.ToString(m.MessageId), err))
				}
			}
		}
	}()
	return func() int {
		close(done)
		wg.Wait()
		return beats
	}
}

// Run receives messages (long polling) and hands them to workers
// goroutines (at least 1), each calling Handle, until ctx is done; then it
// waits for the running handlers and returns ctx.Err(). Handlers run with
// context.WithoutCancel(ctx): a shutdown does not leave an effect half done
// (bound the handler's own time if it can hang). It never holds more
// received messages than it has free workers. Outcomes go to WithOutcome,
// ReceiveMessage errors to WithErrorHandler.
func (c *Consumer) Run(ctx context.Context, workers int, h Handler) error {
	if h == nil {
		return errors.New("idemsqs: nil handler")
	}
	workers = max(workers, 1)
	free := make(chan struct{}, workers)
	for range workers {
		free <- struct{}{}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	hctx := context.WithoutCancel(ctx)
	for {
		// Take one free worker (waiting if all are busy), then as many
		// more as are free, up to the batch.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-free:
		}
		n := int32(1)
	more:
		for n < c.batch {
			select {
			case <-free:
				n++
			default:
				break more
			}
		}
		out, err := c.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: &c.queueURL, MaxNumberOfMessages: n, WaitTimeSeconds: c.waitTime,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		var msgs []types.Message
		if out != nil {
			msgs = out.Messages
		}
		for range int(n) - len(msgs) {
			free <- struct{}{}
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if c.onError != nil {
				c.onError(fmt.Errorf("idemsqs: receive from %s: %w", c.queueURL, err))
			}
			t := time.NewTimer(time.Second)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
			continue
		}
		for _, m := range msgs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { free <- struct{}{} }()
				c.Handle(hctx, m, h) //nolint:errcheck // reported to WithOutcome
			}()
		}
	}
}
