package idemamqp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemamqp"
	"github.com/idemgen/idemgen/runtime/idemqueue"
	"github.com/idemgen/idemgen/runtime/memstore"
)

const amqpHint = "Start RabbitMQ: rabbitmq-server -detached (Debian package rabbitmq-server; scripts/base-services.sh does it), or set IDEM_AMQP_URL."

func amqpURL() string { return testenv.Env("IDEM_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/") }

type settleOut struct {
	Status     idemqueue.Status
	Action     idemamqp.Action
	Permanent  bool
	Requeued   []string // bodies back in the queue
	DeadLetter []string // bodies in the dead-letter queue
}

// drain gets every message ready in queue (acking them).
func drain(t *testing.T, ch *amqp.Channel, queue string) []string {
	t.Helper()
	var out []string
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		d, ok, err := ch.Get(queue, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if len(out) > 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		out = append(out, string(d.Body))
	}
	return out
}

// TestSettle: how Handle settles a delivery for each outcome, checked on
// the queue and its dead-letter queue (x-dead-letter-exchange) afterwards.
func TestSettle(t *testing.T) {
	conn, err := amqp.Dial(amqpURL())
	testenv.Need(t, "RabbitMQ at "+amqpURL(), amqpHint, err)
	defer conn.Close()
	fail := errors.New("transient")
	tests := []struct {
		name      string
		messageID string
		body      string
		handled   bool // processed before (with body "b1")
		handler   error
		opts      []idemamqp.Option
		want      settleOut
	}{
		{"ran: ack", "e1", "b1", false, nil, nil, settleOut{Status: idemqueue.Ran, Action: idemamqp.Acked}},
		{"duplicate: ack", "e1", "b1", true, nil, nil, settleOut{Status: idemqueue.Duplicate, Action: idemamqp.Acked}},
		{"transient failure: requeued", "e1", "b1", false, fail, nil,
			settleOut{Status: idemqueue.Failed, Action: idemamqp.Requeued, Requeued: []string{"b1"}}},
		{"no message ID: dead-lettered", "", "b1", false, nil, nil,
			settleOut{Status: idemqueue.Failed, Action: idemamqp.Rejected, Permanent: true, DeadLetter: []string{"b1"}}},
		{"payload mismatch: dead-lettered", "e1", "other", true, nil, []idemamqp.Option{idemamqp.WithPayload(true)},
			settleOut{Status: idemqueue.Failed, Action: idemamqp.Rejected, Permanent: true, DeadLetter: []string{"other"}}},
		{"header ID", "", "b1", false, nil, []idemamqp.Option{idemamqp.WithHeaderID("event-id")},
			settleOut{Status: idemqueue.Ran, Action: idemamqp.Acked}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, err := conn.Channel()
			if err != nil {
				t.Fatal(err)
			}
			defer ch.Close()
			run := testenv.RandName()
			queue, dlq := "idemtest.settle."+run, "idemtest.settle."+run+".dlq"
			if _, err := ch.QueueDeclare(dlq, false, false, false, false, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := ch.QueueDeclare(queue, false, false, false, false, amqp.Table{
				"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ch, err := conn.Channel()
				if err == nil {
					ch.QueueDelete(queue, false, false, false) //nolint:errcheck
					ch.QueueDelete(dlq, false, false, false)   //nolint:errcheck
					ch.Close()
				}
			})
			q := idemqueue.New(idem.NewGuard(memstore.New()))
			payload := len(tt.opts) > 0 && tt.name == "payload mismatch: dead-lettered"
			if tt.handled {
				var err error
				if payload {
					_, err = q.ProcessPayload(context.Background(), tt.messageID, []byte("b1"), func(context.Context) error { return nil })
				} else {
					_, err = q.Process(context.Background(), tt.messageID, func(context.Context) error { return nil })
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			pub := amqp.Publishing{MessageId: tt.messageID, Body: []byte(tt.body)}
			if tt.name == "header ID" {
				pub.Headers = amqp.Table{"event-id": "e9"}
			}
			if err := ch.PublishWithContext(context.Background(), "", queue, false, false, pub); err != nil {
				t.Fatal(err)
			}
			var d amqp.Delivery
			for ok := false; !ok; {
				if d, ok, err = ch.Get(queue, false); err != nil {
					t.Fatal(err)
				}
			}
			c := idemamqp.New(q, append([]idemamqp.Option{idemamqp.WithRequeueDelay(0)}, tt.opts...)...)
			o, err := c.Handle(context.Background(), d, func(context.Context, amqp.Delivery) error { return tt.handler })
			got := settleOut{Status: o.Status, Action: o.Action, Permanent: idemqueue.IsPermanent(err)}
			if tt.want.Requeued != nil {
				got.Requeued = drain(t, ch, queue)
			}
			if tt.want.DeadLetter != nil {
				got.DeadLetter = drain(t, ch, dlq)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\nerr: %v", diff, err)
			}
			if qi, err := ch.QueueDeclarePassive(queue, false, false, false, false, nil); err != nil || qi.Messages != 0 {
				t.Errorf("queue after settling: %+v, %v; want empty", qi, err)
			}
		})
	}
}
