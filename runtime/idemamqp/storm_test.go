package idemamqp_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idemgen/idemgen/internal/stormtest"
	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemamqp"
	"github.com/idemgen/idemgen/runtime/idemqueue"
	"github.com/idemgen/idemgen/runtime/pgstore"
)

const (
	pgHint = "Start PostgreSQL on 127.0.0.1:5432 with a database test (scripts/base-services.sh), or set IDEM_POSTGRES_URL."
	// workerEnv carries a storm worker's JSON configuration.
	workerEnv = "IDEMAMQP_STORM_WORKER"
)

// TestMain lets the test binary double as a storm worker process.
func TestMain(m *testing.M) { stormtest.Main(m, workerEnv, runWorker) }

// workerConfig is what the storm tells one worker process.
type workerConfig struct {
	AMQPURL, Queue   string
	PGURL, Schema    string
	Goroutines       int
	Prefetch         int
	Lease            time.Duration
	HoldMin, HoldMax time.Duration
	NackEvery        uint32 // fail the first delivery of 1 in NackEvery IDs
}

// runWorker consumes the queue with idemamqp on pgstore until ctx is done.
// The handler's side effect is a ledger row, inserted in the transaction
// that completes the idempotency record (pgstore.InTx): a SIGKILL anywhere
// leaves both or neither.
func runWorker(ctx context.Context, cfg workerConfig) error {
	pool, err := pgxpool.New(ctx, cfg.PGURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	store, err := pgstore.New(ctx, pool, pgstore.WithSchema(cfg.Schema))
	if err != nil {
		return err
	}
	defer store.Close()
	q := idemqueue.New(idem.NewGuard(store), idemqueue.WithName("storm"),
		idemqueue.WithLease(cfg.Lease), idemqueue.WithWait(3*cfg.Lease))
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
	err = c.Run(ctx, deliveries, cfg.Goroutines, func(ctx context.Context, d amqp.Delivery) error {
		stormtest.Say("run id=%s", d.MessageId)
		time.Sleep(stormtest.Hold(cfg.HoldMin, cfg.HoldMax))
		if cfg.NackEvery > 0 && !d.Redelivered && stormtest.Hash(d.MessageId)%cfg.NackEvery == 0 {
			return errors.New("chaos: first delivery fails")
		}
		return insertLedger(ctx, store, cfg.Schema, d.MessageId)
	})
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// insertLedger writes the side effect: a ledger row, in the transaction
// that completes the idempotency record.
func insertLedger(ctx context.Context, store *pgstore.Store, schema, id string) error {
	fence, _ := idem.FenceFrom(ctx)
	_, err := pgstore.InTx(ctx, store, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) (struct{}, error) {
		_, err := tx.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "ledger"}.Sanitize()+` (id, fence, pid) VALUES ($1, $2, $3)`, id, int64(fence), os.Getpid())
		return struct{}{}, err
	})
	return err
}

// needLedger migrates a store schema with a ledger table in PostgreSQL
// (dropped at cleanup) and returns the schema and the ledger's count of
// rows per message ID.
func needLedger(ctx context.Context, t *testing.T, run string) (string, func() map[string]int) {
	pool, err := pgxpool.New(ctx, testenv.PostgresURL())
	if err == nil {
		err = pool.Ping(ctx)
	}
	testenv.Need(t, "PostgreSQL at "+testenv.PostgresURL(), pgHint, err)
	t.Cleanup(pool.Close)
	schema := "idemamqp_storm_" + run
	table := pgx.Identifier{schema, "ledger"}.Sanitize()
	if err := pgstore.Migrate(ctx, pool, pgstore.WithSchema(schema)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`) //nolint:errcheck
	})
	if _, err := pool.Exec(ctx, `CREATE TABLE `+table+` (id text NOT NULL, fence bigint NOT NULL, pid int NOT NULL, at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	return schema, func() map[string]int {
		rows, err := pool.Query(ctx, `SELECT id, count(*) FROM `+table+` GROUP BY id`)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for rows.Next() {
			var id string
			var n int
			if err := rows.Scan(&id, &n); err != nil {
				t.Fatal(err)
			}
			m[id] = n
		}
		return m
	}
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
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
	schema, ledger := needLedger(ctx, t, run)
	queue := "idemtest.storm." + run
	if _, err := ch.QueueDeclare(queue, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.QueueDelete(queue, false, false, false) }) //nolint:errcheck

	cfg := workerConfig{AMQPURL: url, Queue: queue, PGURL: testenv.PostgresURL(), Schema: schema, Goroutines: sz.Goroutines,
		Prefetch: 2 * sz.Goroutines, Lease: time.Second, HoldMin: sz.Hold / 2, HoldMax: 2 * sz.Hold, NackEvery: sz.NackEvery}
	res := stormtest.RunQueue(ctx, t, stormtest.Queue{Size: sz, Env: workerEnv, Worker: cfg,
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
