package idemsqs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/internal/stormtest"
	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemqueue"
	"github.com/idemgen/idemgen/runtime/idemsqs"
	"github.com/idemgen/idemgen/runtime/pgstore"
)

// workerEnv carries a storm worker's JSON configuration.
const workerEnv = "IDEMSQS_STORM_WORKER"

// TestMain lets the test binary double as a storm worker process.
func TestMain(m *testing.M) { stormtest.Main(m, workerEnv, runWorker) }

// workerConfig is what the storm tells one worker process.
type workerConfig struct {
	Endpoint, Queue  string
	Visibility       time.Duration
	PGURL, Schema    string
	Goroutines       int
	Lease            time.Duration
	HoldMin, HoldMax time.Duration
	NackEvery        uint32 // fail the first run (in a process) of 1 in NackEvery IDs
	LongEvery        uint32 // 1 in LongEvery IDs holds Long, past the queue's visibility timeout
	Long             time.Duration
}

// runWorker consumes the queue with idemsqs on pgstore until ctx is done.
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
	c := idemsqs.New(newClient(cfg.Endpoint), cfg.Queue, q, idemsqs.WithAttributeID("event-id"),
		idemsqs.WithVisibility(cfg.Visibility), idemsqs.WithRetryVisibility(0), idemsqs.WithReceive(1, 10),
		idemsqs.WithOutcome(func(m types.Message, o idemsqs.Outcome, err error) {
			stormtest.Say("outcome id=%s status=%s action=%s mid=%s beats=%d err=%q", o.ID, o.Status, o.Action, aws.ToString(m.MessageId), o.Heartbeats, fmt.Sprint(err))
		}))
	stormtest.Say("ready pid=%d", os.Getpid())
	var failedOnce sync.Map // IDs whose first handler run failed (chaos), in this process
	err = c.Run(ctx, cfg.Goroutines, func(ctx context.Context, m types.Message) error {
		id := *m.MessageAttributes["event-id"].StringValue
		stormtest.Say("run id=%s", id)
		hold := stormtest.Hold(cfg.HoldMin, cfg.HoldMax)
		if cfg.LongEvery > 0 && stormtest.Hash("long:"+id)%cfg.LongEvery == 0 {
			hold = cfg.Long
		}
		time.Sleep(hold)
		if _, failed := failedOnce.LoadOrStore(id, true); cfg.NackEvery > 0 && !failed && stormtest.Hash(id)%cfg.NackEvery == 0 {
			return errors.New("chaos: first run fails")
		}
		return insertLedger(ctx, store, cfg.Schema, id)
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
	schema := "idemsqs_storm_" + run
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

// TestRedeliveryStorm: a producer sends N messages, each with a stable
// event-id attribute (a quarter of them sent twice, as a retrying producer
// would: two SQS MessageIds, one event ID), while several worker processes
// consume them through idemsqs on one PostgreSQL store. The queue's
// visibility timeout is 2s; some handlers hold 4s (the heartbeat must keep
// them invisible), some first runs fail (visibility set to 0: redelivered
// at once), and the test SIGKILLs workers inside handlers (their heartbeat
// stops, the visibility timeout expires, SQS redelivers). The ledger,
// written in the transaction that completes the record, must hold exactly
// one row per event ID, and the queue must end empty.
func TestRedeliveryStorm(t *testing.T) {
	sz := stormtest.QueueSizeFromEnv()
	longEvery := uint32(40)
	if stormtest.Full() {
		longEvery = 50
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	client := newClient(sqsEndpoint())
	run := testenv.RandName()
	queue := needQueue(t, client, "idemtest-storm-"+run, map[string]string{"VisibilityTimeout": "2"})
	schema, ledger := needLedger(ctx, t, run)

	cfg := workerConfig{Endpoint: sqsEndpoint(), Queue: queue, PGURL: testenv.PostgresURL(), Schema: schema, Goroutines: sz.Goroutines,
		Visibility: 3 * time.Second, Lease: time.Second, HoldMin: sz.Hold / 2, HoldMax: 2 * sz.Hold, NackEvery: sz.NackEvery,
		LongEvery: longEvery, Long: 4 * time.Second}
	res := stormtest.RunQueue(ctx, t, stormtest.Queue{Size: sz, Env: workerEnv, Worker: cfg,
		Publish: func(ctx context.Context, id string, n int) error {
			_, err := client.SendMessage(ctx, &sqs.SendMessageInput{
				QueueUrl: aws.String(queue), MessageBody: aws.String(fmt.Sprintf(`{"n":%d}`, n)),
				MessageAttributes: map[string]types.MessageAttributeValue{
					"event-id": {DataType: aws.String("String"), StringValue: aws.String(id)}},
			})
			return err
		},
		// The messages still in the queue, visible or in flight.
		Pending: func() int {
			out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queue),
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
			if err != nil {
				t.Fatal(err)
			}
			var a, b int
			fmt.Sscan(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)], &a)
			fmt.Sscan(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)], &b)
			return a + b
		},
		Ledger: ledger,
		// A stray redelivery would land within a visibility timeout.
		Quiet: 2 * cfg.Visibility,
	})

	count := map[string]int{}
	perMID := map[string]int{}
	beats, longSettled := 0, 0
	for _, line := range res.Outcomes {
		var id, status, action, mid, errq string
		var n int
		if _, err := fmt.Sscanf(line, "outcome id=%s status=%s action=%s mid=%s beats=%d err=%q", &id, &status, &action, &mid, &n, &errq); err != nil {
			t.Errorf("outcome line %q: %v", line, err)
			continue
		}
		count[status+"/"+action]++
		perMID[mid]++
		beats += n
		if status == "ran" && stormtest.Hash("long:"+id)%longEvery == 0 {
			longSettled++
		}
	}
	// A redelivery observed: a settled delivery of an SQS MessageId that
	// was settled before (deliveries lost with a killed worker are not
	// seen; goaws's ApproximateReceiveCount is always 1).
	redelivered := 0
	for _, n := range perMID {
		redelivered += n - 1
	}
	t.Logf("%s storm: %d messages + %d duplicate sends, %d kills, outcomes %v, %d redeliveries, %d heartbeats, %d long handlers ran, %v",
		stormtest.Level(), sz.Messages, res.DupSends, res.Kills, count, redelivered, beats, longSettled, res.Took.Round(100*time.Millisecond))
	if count["failed/leave"] == 0 || redelivered == 0 || count["duplicate/delete"] == 0 || beats == 0 {
		t.Errorf("the storm did not exercise failures, redeliveries, duplicates and heartbeats: %v, %d redeliveries, %d heartbeats", count, redelivered, beats)
	}
	stormtest.Report(t, stormtest.Row{Broker: "SQS (aws-sdk-go-v2, sqsemu = goaws v0.4.5)", Messages: sz.Messages, DupSends: res.DupSends,
		Forced:      fmt.Sprintf("%d SIGKILLs mid-handler (visibility expiry), %d failed runs (visibility 0)", res.Kills, count["failed/leave"]),
		Redelivered: redelivered, Effects: res.Effects, Dups: res.Duplicates, Lost: res.Lost,
		Notes: fmt.Sprintf("%d processes × %d goroutines, queue visibility 2s, heartbeat to %v every %v, %d handlers of 4s kept invisible by %d heartbeats, lease %v; %v",
			sz.Procs, sz.Goroutines, cfg.Visibility, cfg.Visibility/3, longSettled, beats, cfg.Lease, res.Took.Round(100*time.Millisecond))})
}
