package idemamqp_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idemgen/idemgen/internal/stormtest"
	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idemamqp"
	"github.com/idemgen/idemgen/runtime/pgstore"
)

// TestMain lets the test binary double as a storm worker process.
func TestMain(m *testing.M) { stormtest.Main(m, runWorker) }

// workerConfig is what the storm tells one worker process.
type workerConfig struct {
	stormtest.PGWorker
	AMQPURL, Queue string
	Prefetch       int
}

// runWorker consumes the queue with idemamqp on pgstore until ctx is done.
// The handler's side effect is a ledger row, inserted in the transaction
// that completes the idempotency record (pgstore.InTx): a SIGKILL anywhere
// leaves both or neither.
func runWorker(ctx context.Context, cfg workerConfig) error {
	store, q, done, err := stormtest.OpenPG(ctx, cfg.PGWorker, pgxpool.New, pgstore.New, pgstore.WithSchema(cfg.Schema))
	if err != nil {
		return err
	}
	defer done()
	conn, err := amqp.Dial(cfg.AMQPURL)
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Qos(cfg.Prefetch, 0, false); err != nil {
		return err
	}
	deliveries, err := ch.Consume(cfg.Queue, "", false, false, false, false, nil)
	if err != nil {
		return err
	}
	c := idemamqp.New(q, idemamqp.WithRequeueDelay(20*time.Millisecond),
		idemamqp.WithOutcome(func(d amqp.Delivery, o idemamqp.Outcome, err error) {
			stormtest.Say("outcome id=%s status=%s action=%s redelivered=%t err=%q", o.ID, o.Status, o.Action, d.Redelivered, fmt.Sprint(err))
		}))
	stormtest.Say("ready pid=%d", os.Getpid())
	return c.Run(ctx, deliveries, cfg.Goroutines, func(ctx context.Context, d amqp.Delivery) error {
		stormtest.Say("run id=%s", d.MessageId)
		time.Sleep(stormtest.Hold(cfg.HoldMin, cfg.HoldMax))
		if cfg.NackEvery > 0 && !d.Redelivered && stormtest.Hash(d.MessageId)%cfg.NackEvery == 0 {
			return errors.New("chaos: first delivery fails")
		}
		// The side effect: a ledger row, in the transaction that completes
		// the idempotency record.
		_, err := pgstore.InTx(ctx, store, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) (pgconn.CommandTag, error) {
			return tx.Exec(ctx, stormtest.LedgerInsert(cfg.Schema), stormtest.LedgerArgs(ctx, d.MessageId)...)
		})
		return err
	})
}

// TestRedeliveryStorm: a producer publishes N messages with stable
// MessageIds (a quarter of them twice, as a retrying producer would)
// while several worker processes consume them through idemamqp on one
// PostgreSQL store; the test SIGKILLs workers inside handlers (RabbitMQ
// requeues their unacked deliveries when the connection drops) and some
// first deliveries fail (Nack requeue). The ledger, written in the
// transaction that completes the record, must hold exactly one row per
// message ID, and the queue must end empty with nothing unacked.
func TestRedeliveryStorm(t *testing.T) {
	sz := stormtest.QueueSizeFromEnv()
	ctx := stormtest.Context(t, 10*time.Minute)
	url := amqpURL()
	conn, err := amqp.Dial(url)
	testenv.Need(t, "RabbitMQ at "+url, amqpHint, err)
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	pubCh, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	run := testenv.RandName()
	schema := "idemamqp_storm_" + run
	pool, err := pgxpool.New(ctx, testenv.PostgresURL())
	ledger := stormtest.NeedLedger(ctx, t, pool, err, schema, func(ctx context.Context) error {
		return pgstore.Migrate(ctx, pool, pgstore.WithSchema(schema))
	})
	queue := "idemtest.storm." + run
	if _, err := ch.QueueDeclare(queue, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.QueueDelete(queue, false, false, false) }) //nolint:errcheck

	// The first delivery (not Redelivered) of 1 in NackEvery IDs fails.
	cfg := workerConfig{PGWorker: stormtest.PGWorkerOf(sz, schema), AMQPURL: url, Queue: queue, Prefetch: 2 * sz.Goroutines}
	res := stormtest.RunQueue(ctx, t, stormtest.Queue{Size: sz, Worker: cfg,
		Publish: func(ctx context.Context, id string, n int) error {
			return pubCh.PublishWithContext(ctx, "", queue, false, false, amqp.Publishing{
				MessageId: id, ContentType: "application/json", Body: fmt.Appendf(nil, `{"n":%d}`, n)})
		},
		Pending: func() int {
			qi, err := ch.QueueDeclarePassive(queue, false, false, false, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			return qi.Messages
		},
		Ledger: ledger,
		// A stray redelivery would land within a few leases; with every
		// worker gone, an unacked delivery would be back in the queue.
		Quiet: 3 * cfg.Lease, Drain: 200 * time.Millisecond,
	})

	count := map[string]int{}
	redelivered := 0
	for _, line := range res.Outcomes {
		var id, status, action, errq string
		var again bool
		if _, err := fmt.Sscanf(line, "outcome id=%s status=%s action=%s redelivered=%t err=%q", &id, &status, &action, &again, &errq); err != nil {
			t.Errorf("outcome line %q: %v", line, err)
			continue
		}
		count[status+"/"+action]++
		if again {
			redelivered++
		}
	}
	t.Logf("%s storm: %d messages + %d duplicate sends, %d kills, outcomes %v, %d redelivered deliveries, %v",
		stormtest.Level(), sz.Messages, res.DupSends, res.Kills, count, redelivered, res.Took.Round(100*time.Millisecond))
	if count["failed/requeue"] == 0 || redelivered == 0 || count["duplicate/ack"] == 0 {
		t.Errorf("the storm did not exercise nacks, redeliveries and duplicates: %v, %d redelivered", count, redelivered)
	}
	stormtest.Report(t, stormtest.Row{Broker: "RabbitMQ (amqp091-go, classic queue)", Messages: sz.Messages, DupSends: res.DupSends,
		Forced:      fmt.Sprintf("%d SIGKILLs mid-handler, %d nacks (requeue)", res.Kills, count["failed/requeue"]),
		Redelivered: redelivered, Effects: res.Effects, Dups: res.Duplicates, Lost: res.Lost,
		Notes: fmt.Sprintf("%d processes × %d goroutines, prefetch %d, lease %v; %v",
			sz.Procs, sz.Goroutines, cfg.Prefetch, cfg.Lease, res.Took.Round(100*time.Millisecond))})
}
