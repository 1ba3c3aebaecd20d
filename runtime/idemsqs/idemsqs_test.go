package idemsqs_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemcall"
	"github.com/idemgen/idemgen/runtime/idemqueue"
	"github.com/idemgen/idemgen/runtime/idemsqs"
	"github.com/idemgen/idemgen/runtime/memstore"
)

func send(t *testing.T, c *sqs.Client, queue, eventID, body string) {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(body)}
	if eventID != "" {
		in.MessageAttributes = map[string]types.MessageAttributeValue{"event-id": {DataType: aws.String("String"), StringValue: aws.String(eventID)}}
	}
	if _, err := c.SendMessage(context.Background(), in); err != nil {
		t.Fatal(err)
	}
}

func receive(t *testing.T, c *sqs.Client, queue string, wait int32) []types.Message {
	t.Helper()
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10,
		WaitTimeSeconds: wait, MessageAttributeNames: []string{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Messages
}

func bodies(ms []types.Message) []string {
	var b []string
	for _, m := range ms {
		b = append(b, aws.ToString(m.Body))
	}
	return b
}

// TestSettle: what Handle does with a message for each outcome, checked
// on the queues afterwards.
type settleOut struct {
	Status    idemqueue.Status
	Action    idemsqs.Action
	Permanent bool
	Source    []string // bodies receivable from the source queue right after
	DLQ       []string // bodies in the dead-letter queue
}

func TestSettle(t *testing.T) {
	client := newClient(sqsEndpoint())
	fail := errors.New("transient")
	tests := []struct {
		name    string
		eventID string
		body    string
		handled bool // the event was processed before
		handler error
		dlq     bool // WithDeadLetterQueue
		opts    []idemsqs.Option
		want    settleOut
	}{
		{"ran: deleted", "e1", "b1", false, nil, false, nil, settleOut{Status: idemqueue.Ran, Action: idemsqs.Deleted}},
		{"duplicate: deleted", "e1", "b1", true, nil, false, nil, settleOut{Status: idemqueue.Duplicate, Action: idemsqs.Deleted}},
		{"transient failure, retry visibility 0: redelivered at once", "e1", "b1", false, fail, false,
			[]idemsqs.Option{idemsqs.WithRetryVisibility(0)}, settleOut{Status: idemqueue.Failed, Action: idemsqs.Left, Source: []string{"b1"}}},
		{"transient failure, default: left in flight", "e1", "b1", false, fail, false, nil,
			settleOut{Status: idemqueue.Failed, Action: idemsqs.Left}},
		{"no ID, dead-letter queue: copied and deleted", "", "b1", false, nil, true, nil,
			settleOut{Status: idemqueue.Failed, Action: idemsqs.DeadLettered, Permanent: true, DLQ: []string{"b1"}}},
		{"no ID, no dead-letter queue: released for the redrive policy", "", "b1", false, nil, false, nil,
			settleOut{Status: idemqueue.Failed, Action: idemsqs.Released, Permanent: true, Source: []string{"b1"}}},
		{"payload mismatch: permanent", "e1", "other", true, nil, true, []idemsqs.Option{idemsqs.WithPayload(true)},
			settleOut{Status: idemqueue.Failed, Action: idemsqs.DeadLettered, Permanent: true, DLQ: []string{"other"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := testenv.RandName()
			src := needQueue(t, client, "idemtest-settle-"+run, map[string]string{"VisibilityTimeout": "30"})
			dlq := needQueue(t, client, "idemtest-settle-dlq-"+run, nil)
			q := idemqueue.New(idem.NewGuard(memstore.New()))
			opts := append([]idemsqs.Option{idemsqs.WithAttributeID("event-id"), idemsqs.WithVisibility(0)}, tt.opts...)
			if tt.dlq {
				opts = append(opts, idemsqs.WithDeadLetterQueue(dlq))
			}
			c := idemsqs.New(client, src, q, opts...)
			payload := false
			if tt.opts != nil && tt.dlq { // the payload case
				payload = true
			}
			if tt.handled && !payload {
				if _, err := q.Process(context.Background(), tt.eventID, func(context.Context) error { return nil }); err != nil {
					t.Fatal(err)
				}
			}
			if tt.handled && payload {
				if _, err := q.ProcessPayload(context.Background(), tt.eventID, []byte("b1"), func(context.Context) error { return nil }); err != nil {
					t.Fatal(err)
				}
			}
			send(t, client, src, tt.eventID, tt.body)
			ms := receive(t, client, src, 1)
			if len(ms) != 1 {
				t.Fatalf("received %d messages, want 1", len(ms))
			}
			o, err := c.Handle(context.Background(), ms[0], func(context.Context, types.Message) error { return tt.handler })
			got := settleOut{Status: o.Status, Action: o.Action, Permanent: idemqueue.IsPermanent(err),
				Source: bodies(receive(t, client, src, 0)), DLQ: bodies(receive(t, client, dlq, 0))}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\nerr: %v", diff, err)
			}
		})
	}
}

// TestHeartbeat: a handler that runs 5s on a queue whose visibility
// timeout is 2s. With the heartbeat (WithVisibility 3s) a second receiver
// polling all along gets nothing; without it, the emulator redelivers the
// message while the handler still runs (the control: it shows the
// emulator honours the timeout, so the first case shows it honours
// ChangeMessageVisibility).
func TestHeartbeat(t *testing.T) {
	client := newClient(sqsEndpoint())
	tests := []struct {
		name             string
		visibility       time.Duration
		wantRedeliveries bool
	}{
		{"heartbeat keeps the message invisible", 3 * time.Second, false},
		{"without heartbeat the message is redelivered", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := needQueue(t, client, "idemtest-hb-"+testenv.RandName(), map[string]string{"VisibilityTimeout": "2"})
			q := idemqueue.New(idem.NewGuard(memstore.New()), idemcall.WithWait(0))
			c := idemsqs.New(client, src, q, idemsqs.WithAttributeID("event-id"), idemsqs.WithVisibility(tt.visibility))
			send(t, client, src, "e1", "b1")
			ms := receive(t, client, src, 1)
			if len(ms) != 1 {
				t.Fatalf("received %d messages, want 1", len(ms))
			}
			var redelivered atomic.Int32
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
					}
					redelivered.Add(int32(len(receive(t, client, src, 1))))
				}
			}()
			o, err := c.Handle(context.Background(), ms[0], func(context.Context, types.Message) error {
				time.Sleep(5 * time.Second)
				return nil
			})
			close(stop)
			<-done
			if err != nil && tt.visibility > 0 {
				t.Errorf("Handle: %v", err)
			}
			t.Logf("outcome %+v, %d redeliveries while the handler ran", o, redelivered.Load())
			if got := redelivered.Load() > 0; got != tt.wantRedeliveries {
				t.Errorf("redelivered while running: %v, want %v", got, tt.wantRedeliveries)
			}
			if tt.visibility > 0 && o.Heartbeats < 4 {
				t.Errorf("%d heartbeats in 5s at one per %v, want at least 4", o.Heartbeats, tt.visibility/3)
			}
		})
	}
}
