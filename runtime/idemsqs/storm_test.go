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
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/internal/stormtest"
	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idemsqs"
	"github.com/idemgen/idemgen/runtime/pgstore"
)

// TestMain lets the test binary double as a storm worker process.
func TestMain(m *testing.M) { stormtest.Main(m, runWorker) }

// workerConfig is what the storm tells one worker process.
type workerConfig struct {
	stormtest.PGWorker
	Endpoint, Queue string
	Visibility      time.Duration
	LongEvery       uint32 // 1 in LongEvery IDs holds Long, past the queue's visibility timeout
	Long            time.Duration
}

// runWorker consumes the queue with idemsqs on pgstore until ctx is done.
// The handler's side effect is a ledger row, inserted in the transaction
// that completes the idempotency record (pgstore.InTx): a SIGKILL anywhere
// leaves both or neither.
func runWorker(ctx context.Context, cfg workerConfig) error {
	store, q, done, err := stormtest.OpenPG(ctx, cfg.PGWorker, pgxpool.New, pgstore.New, pgstore.WithSchema(cfg.Schema))
	if err != nil {
		return err
	}
	defer done()
	c := idemsqs.New(newClient(cfg.Endpoint), cfg.Queue, q, idemsqs.WithAttributeID("event-id"),
		idemsqs.WithVisibility(cfg.Visibility), idemsqs.WithRetryVisibility(0), idemsqs.WithReceive(1, 10),
		idemsqs.WithOutcome(func(m types.Message, o idemsqs.Outcome, err error) {
			stormtest.Say("outcome id=%s status=%s action=%s mid=%s beats=%d err=%q", o.ID, o.Status, o.Action, aws.ToString(m.MessageId), o.Heartbeats, fmt.Sprint(err))
		}))
	stormtest.Say("ready pid=%d", os.Getpid())
	var failedOnce sync.Map // IDs whose first handler run failed (chaos), in this process
	return c.Run(ctx, cfg.Goroutines, func(ctx context.Context, m types.Message) error {
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
		// The side effect: a ledger row, in the transaction that completes
		// the idempotency record.
		_, err := pgstore.InTx(ctx, store, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) (pgconn.CommandTag, error) {
			return tx.Exec(ctx, stormtest.LedgerInsert(cfg.Schema), stormtest.LedgerArgs(ctx, id)...)
		})
		return err
	})
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
	ctx := stormtest.Context(t, 10*time.Minute)
	client := newClient(sqsEndpoint())
	run := testenv.RandName()
	queue := needQueue(t, client, "idemtest-storm-"+run, map[string]string{"VisibilityTimeout": "2"})
	schema := "idemsqs_storm_" + run
	pool, err := pgxpool.New(ctx, testenv.PostgresURL())
	ledger := stormtest.NeedLedger(ctx, t, pool, err, schema, func(ctx context.Context) error {
		return pgstore.Migrate(ctx, pool, pgstore.WithSchema(schema))
	})

	// The first run in a process of 1 in NackEvery IDs fails.
	cfg := workerConfig{PGWorker: stormtest.PGWorkerOf(sz, schema), Endpoint: sqsEndpoint(), Queue: queue,
		Visibility: 3 * time.Second, LongEvery: longEvery, Long: 4 * time.Second}
	res := stormtest.RunQueue(ctx, t, stormtest.Queue{Size: sz, Worker: cfg,
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
