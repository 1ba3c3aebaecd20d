package idemamqp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"

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
func TestMain(m *testing.M) {
	if raw := os.Getenv(workerEnv); raw != "" {
		var cfg workerConfig
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
			fmt.Fprintln(os.Stderr, "worker config:", err)
			os.Exit(2)
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		if err := runWorker(ctx, cfg); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

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
	var mu sync.Mutex
	say := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", a...)
	}
	c := idemamqp.New(q, idemamqp.WithRequeueDelay(20*time.Millisecond),
		idemamqp.WithOutcome(func(d amqp.Delivery, o idemamqp.Outcome, err error) {
			say("outcome id=%s status=%s action=%s redelivered=%t err=%q", o.ID, o.Status, o.Action, d.Redelivered, errString(err))
		}))
	say("ready pid=%d", os.Getpid())
	pid := os.Getpid()
	return ignoreCanceled(c.Run(ctx, deliveries, cfg.Goroutines, func(ctx context.Context, d amqp.Delivery) error {
		say("run id=%s", d.MessageId)
		hold := cfg.HoldMin
		if cfg.HoldMax > cfg.HoldMin {
			hold += rand.N(cfg.HoldMax - cfg.HoldMin)
		}
		time.Sleep(hold)
		if cfg.NackEvery > 0 && !d.Redelivered && hashOf(d.MessageId)%cfg.NackEvery == 0 {
			return errors.New("chaos: first delivery fails")
		}
		fence, _ := idem.FenceFrom(ctx)
		_, err := pgstore.InTx(ctx, store, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) (struct{}, error) {
			_, err := tx.Exec(ctx, `INSERT INTO `+pgx.Identifier{cfg.Schema, "ledger"}.Sanitize()+` (id, fence, pid) VALUES ($1, $2, $3)`, d.MessageId, int64(fence), pid)
			return struct{}{}, err
		})
		return err
	}))
}

func ignoreCanceled(err error) error {
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func hashOf(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// proc is one worker process and what it printed.
type proc struct {
	cmd  *exec.Cmd
	runs chan string // "run" lines, dropped when nobody reads
	done chan struct{}
	mu   sync.Mutex
	outs []outcomeLine
}

type outcomeLine struct {
	ID, Status, Action string
	Redelivered        bool
}

func startWorker(t *testing.T, cfg workerConfig) *proc {
	t.Helper()
	raw, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"="+string(raw))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, runs: make(chan string, 1), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "run "):
				select {
				case p.runs <- line:
				default:
				}
			case strings.HasPrefix(line, "outcome "):
				var o outcomeLine
				var errq string
				if _, err := fmt.Sscanf(line, "outcome id=%s status=%s action=%s redelivered=%t err=%q", &o.ID, &o.Status, &o.Action, &o.Redelivered, &errq); err == nil {
					p.mu.Lock()
					p.outs = append(p.outs, o)
					p.mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill() //nolint:errcheck
			<-p.done
			p.cmd.Wait() //nolint:errcheck
		}
	})
	return p
}

func (p *proc) outcomes() []outcomeLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]outcomeLine(nil), p.outs...)
}

// stop ends the process (SIGTERM, or SIGKILL) and waits for it.
func (p *proc) stop(sig syscall.Signal) {
	p.cmd.Process.Signal(sig) //nolint:errcheck
	<-p.done
	p.cmd.Wait() //nolint:errcheck
}

type stormSize struct {
	messages, dupEvery, procs, goroutines, kills int
	nackEvery                                    uint32
	hold, publishFor                             time.Duration
}

func sizeOf() (stormSize, string) {
	if os.Getenv("IDEM_RELIABILITY") == "full" {
		return stormSize{messages: 2000, dupEvery: 4, procs: 4, goroutines: 4, kills: 12, nackEvery: 10, hold: 20 * time.Millisecond, publishFor: 20 * time.Second}, "full"
	}
	return stormSize{messages: 120, dupEvery: 4, procs: 3, goroutines: 3, kills: 3, nackEvery: 10, hold: 20 * time.Millisecond, publishFor: 2 * time.Second}, "short"
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
	sz, level := sizeOf()
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
	pgURL := testenv.PostgresURL()
	pool, err := pgxpool.New(ctx, pgURL)
	if err == nil {
		err = pool.Ping(ctx)
	}
	testenv.Need(t, "PostgreSQL at "+pgURL, pgHint, err)
	defer pool.Close()

	run := testenv.RandName()
	schema := "idemamqp_storm_" + run
	queue := "idemtest.storm." + run
	if err := pgstore.Migrate(ctx, pool, pgstore.WithSchema(schema)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`) //nolint:errcheck
	})
	if _, err := pool.Exec(ctx, `CREATE TABLE `+pgx.Identifier{schema, "ledger"}.Sanitize()+` (id text NOT NULL, fence bigint NOT NULL, pid int NOT NULL, at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(queue, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.QueueDelete(queue, false, false, false) }) //nolint:errcheck

	cfg := workerConfig{AMQPURL: url, Queue: queue, PGURL: pgURL, Schema: schema, Goroutines: sz.goroutines,
		Prefetch: 2 * sz.goroutines, Lease: time.Second, HoldMin: sz.hold / 2, HoldMax: 2 * sz.hold, NackEvery: sz.nackEvery}
	var procs, retired []*proc
	for range sz.procs {
		procs = append(procs, startWorker(t, cfg))
	}
	start := time.Now()

	// Publish over publishFor: every message once, and every
	// dupEvery-th again, half right after the original and half at the
	// end. The kills spread over the same time.
	pubCh, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	dupSends := 0
	var order []int
	var late []int
	for i := range sz.messages {
		order = append(order, i)
		if i%sz.dupEvery == 0 {
			dupSends++
			if i%(2*sz.dupEvery) == 0 {
				order = append(order, i)
			} else {
				late = append(late, i)
			}
		}
	}
	order = append(order, late...)
	pubErr := make(chan error, 1)
	go func() {
		defer close(pubErr)
		pause := sz.publishFor / time.Duration(len(order)/10+1)
		for k, i := range order {
			err := pubCh.PublishWithContext(ctx, "", queue, false, false, amqp.Publishing{
				MessageId: fmt.Sprintf("evt-%d", i), ContentType: "application/json",
				Body: fmt.Appendf(nil, `{"n":%d}`, i),
			})
			if err != nil {
				pubErr <- err
				return
			}
			if k%10 == 9 {
				time.Sleep(pause)
			}
		}
	}()

	// Kill workers inside a handler: wait for a "run" line, SIGKILL at
	// once, start a replacement.
	kills := 0
	for kills < sz.kills && ctx.Err() == nil {
		time.Sleep(sz.publishFor / time.Duration(sz.kills+1))
		victim := rand.N(len(procs))
		p := procs[victim]
		select {
		case <-p.runs:
		case <-time.After(10 * time.Second):
			t.Fatalf("worker %d ran no handler for 10s (after %d kills)", p.cmd.Process.Pid, kills)
		}
		p.stop(syscall.SIGKILL)
		kills++
		procs[victim] = startWorker(t, cfg)
		retired = append(retired, p)
	}
	if err := <-pubErr; err != nil {
		t.Fatalf("publish: %v", err)
	}

	ledger := func() map[string]int {
		rows, err := pool.Query(ctx, `SELECT id, count(*) FROM `+pgx.Identifier{schema, "ledger"}.Sanitize()+` GROUP BY id`)
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
	ready := func() int {
		qi, err := ch.QueueDeclarePassive(queue, false, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return qi.Messages
	}
	for len(ledger()) < sz.messages || ready() > 0 {
		if ctx.Err() != nil {
			t.Fatalf("not settled: %d of %d messages in the ledger, %d ready in the queue", len(ledger()), sz.messages, ready())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A stray redelivery would land within a few leases.
	time.Sleep(3 * cfg.Lease)
	for _, p := range procs {
		p.stop(syscall.SIGTERM)
	}
	took := time.Since(start)
	// With every worker gone, an unacked delivery would be back in the
	// queue.
	time.Sleep(200 * time.Millisecond)
	left := ready()

	got := ledger()
	dups, lost, effects := 0, 0, 0
	for i := range sz.messages {
		n := got[fmt.Sprintf("evt-%d", i)]
		effects += n
		switch {
		case n == 0:
			lost++
			t.Errorf("evt-%d: no side effect", i)
		case n > 1:
			dups += n - 1
			t.Errorf("evt-%d: %d side effects", i, n)
		}
	}
	if len(got) != sz.messages {
		t.Errorf("ledger has %d IDs, want %d", len(got), sz.messages)
	}
	if left != 0 {
		t.Errorf("%d messages left in the queue after every worker stopped (unacked or never consumed)", left)
	}
	count := map[string]int{}
	redelivered := 0
	for _, p := range append(retired, procs...) {
		for _, o := range p.outcomes() {
			count[o.Status+"/"+o.Action]++
			if o.Redelivered {
				redelivered++
			}
		}
	}
	t.Logf("%s storm: %d messages + %d duplicate sends, %d kills, outcomes %v, %d redelivered deliveries, %v",
		level, sz.messages, dupSends, kills, count, redelivered, took.Round(100*time.Millisecond))
	if count["failed/requeue"] == 0 || redelivered == 0 || count["duplicate/ack"] == 0 {
		t.Errorf("the storm did not exercise nacks, redeliveries and duplicates: %v, %d redelivered", count, redelivered)
	}
	reportRow(t, "RabbitMQ (amqp091-go, classic queue)", level, sz.messages, dupSends,
		fmt.Sprintf("%d SIGKILLs mid-handler, %d nacks (requeue)", kills, count["failed/requeue"]),
		redelivered, effects, dups, lost, fmt.Sprintf("%d processes × %d goroutines, prefetch %d, lease %v; %v", sz.procs, sz.goroutines, cfg.Prefetch, cfg.Lease, took.Round(100*time.Millisecond)))
}

// reportRow appends the storm's row to IDEM_RELIABILITY_REPORT_BROKERS,
// with the table's header when the file has none yet.
func reportRow(t *testing.T, broker, level string, messages, dupSends int, forced string, redelivered, effects, dups, lost int, notes string) {
	path := os.Getenv("IDEM_RELIABILITY_REPORT_BROKERS")
	if path == "" || t.Failed() && dups == 0 && lost == 0 {
		return
	}
	prev, _ := os.ReadFile(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Errorf("broker report: %v", err)
		return
	}
	defer f.Close()
	if !strings.Contains(string(prev), "| broker |") {
		fmt.Fprintf(f, "| broker | size | messages | duplicate sends | forced redeliveries | redeliveries observed | side effects | duplicates | lost | notes |\n|---|---|---|---|---|---|---|---|---|---|\n")
	}
	fmt.Fprintf(f, "| %s | %s | %d | %d | %s | %d | %d | %d | %d | %s (%s) |\n", broker, level, messages, dupSends, forced, redelivered, effects, dups, lost,
		notes, time.Now().UTC().Format("2006-01-02 15:04 MST"))
}
