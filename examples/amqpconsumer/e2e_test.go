package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/testenv"
)

// TestMain lets the test binary double as the consumer: the test runs it
// as child processes, so one of them can die for real.
func TestMain(m *testing.M) {
	if args := os.Getenv("AMQPCONSUMER_ARGS"); args != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		if err := run(ctx, strings.Fields(args), os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "consumer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const (
	amqpHint  = "Start RabbitMQ: rabbitmq-server -detached (Debian package rabbitmq-server; scripts/base-services.sh does it), or set IDEM_AMQP_URL."
	redisHint = "Start Redis: redis-server --port 6379 (or docker run -d -p 6379:6379 redis:7), or set IDEM_REDIS_ADDR."
)

type consumerProc struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	done  chan struct{}
}

func startConsumer(t *testing.T, args string) *consumerProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AMQPCONSUMER_ARGS="+args)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &consumerProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); <-p.done; cmd.Wait() })
	return p
}

func (p *consumerProc) wait() int {
	<-p.done
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// exited reports whether the process's output ended (it exited).
func (p *consumerProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// outcomes returns the consumer's outcome lines so far, each as its
// key=value fields (err, last, is the rest of the line, quoted).
func (p *consumerProc) outcomes() []map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []map[string]string
	for _, l := range p.lines {
		if !strings.HasPrefix(l, "outcome ") {
			continue
		}
		l, errText, _ := strings.Cut(l, " err=")
		f := map[string]string{"err": errText}
		for _, kv := range strings.Fields(l)[1:] {
			k, v, _ := strings.Cut(kv, "=")
			f[k] = v
		}
		out = append(out, f)
	}
	return out
}

// settled counts the deliveries a consumer acked or rejected (a requeue
// settles nothing: the message comes back).
func settled(outcomes []map[string]string) int {
	n := 0
	for _, o := range outcomes {
		if o["action"] == "ack" || o["action"] == "reject" {
			n++
		}
	}
	return n
}

// TestExactlyOnceUnderRedelivery publishes N events twice each (a
// retrying producer, same MessageId) and one message without an ID, runs
// a consumer that dies inside evt-7's handler (os.Exit: no ack, lease
// held; RabbitMQ requeues its unacked deliveries when the connection
// drops), then a second one that gets every redelivery and takes evt-7
// over once the dead consumer's lease expired. Through idemamqp, each
// event must be applied exactly once, the balances must add up, every
// message must be settled, and the ID-less one must be in the dead-letter
// queue. The control runs the same without idemamqp and must show every
// event applied twice: the assertions above see a double delivery.
func TestExactlyOnceUnderRedelivery(t *testing.T) {
	tests := []struct {
		name        string
		flags       string
		exactlyOnce bool
	}{
		{"idemamqp", "", true},
		{"control without idemamqp", "-unguarded", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { testRedelivery(t, tt.flags, tt.exactlyOnce) })
	}
}

func testRedelivery(t *testing.T, flags string, exactlyOnce bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := envOr("IDEM_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
	conn, err := amqp.Dial(url)
	testenv.Need(t, "RabbitMQ at "+url, amqpHint, err)
	defer conn.Close()
	redisAddr := envOr("IDEM_REDIS_ADDR", "127.0.0.1:6379")
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	testenv.Need(t, "Redis at "+redisAddr, redisHint, rdb.Ping(ctx).Err())
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}

	run := testenv.RandName()
	queue, prefix := "amqpconsumer-test-"+run, "amqpconsumer-test:"+run+":"
	t.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			ch.QueueDelete(queue, false, false, false)        //nolint:errcheck
			ch.QueueDelete(queue+".dlq", false, false, false) //nolint:errcheck
		}
		keys, _ := rdb.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(context.Background(), keys...)
		}
	})

	const n = 30
	if err := run2(ctx, fmt.Sprintf("-amqp %s -queue %s -publish %d", url, queue, n)); err != nil {
		t.Fatal(err)
	}
	const bad = `{"account":"acct-0","amount":1000}`
	if err := ch.PublishWithContext(ctx, "", queue, true, false, amqp.Publishing{Body: []byte(bad)}); err != nil {
		t.Fatal(err)
	}
	total := 2*n + 1

	common := fmt.Sprintf("-amqp %s -redis %s -queue %s -prefix %s -lease 2s %s", url, redisAddr, queue, prefix, flags)
	// Consumer A handles one delivery at a time, so its crash lands inside
	// evt-7's handler and in no other handler's window between its side
	// effect and the store's record of it (the window idemqueue documents:
	// docs/QUEUES.md, "Crashes and redelivery"); its prefetch holds more.
	a := startConsumer(t, common+" -workers 1 -prefetch 4 -chaos-crash-on evt-7 -chaos-handler-delay 10ms")
	if code := a.wait(); code != 3 {
		t.Fatalf("consumer A exited with %d, want 3 (the crash inside evt-7's handler)", code)
	}
	byA := settled(a.outcomes())
	b := startConsumer(t, common+" -workers 4 -prefetch 8")
	// Wait until B settled every message A did not.
	for settled(b.outcomes()) < total-byA && ctx.Err() == nil && !b.exited() {
		time.Sleep(50 * time.Millisecond)
	}
	if settled(b.outcomes()) < total-byA {
		b.mu.Lock()
		t.Logf("A: %q\nB: %q", a.lines, b.lines)
		b.mu.Unlock()
		t.Fatalf("consumer B settled %d messages, want %d (A settled %d of %d)", settled(b.outcomes()), total-byA, byA, total)
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	if code := b.wait(); code != 0 {
		t.Errorf("consumer B exited with %d after SIGTERM, want 0", code)
	}

	applied := map[string]int{}
	raw, err := rdb.HGetAll(ctx, prefix+"applied").Result()
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range raw {
		if strings.HasPrefix(k, "evt-") {
			applied[k], _ = strconv.Atoi(v)
		}
	}
	if !exactlyOnce {
		// Without idempotency, both publishes of every event ran the
		// side effect: the check below would fail on each event.
		twice := 0
		for _, c := range applied {
			if c >= 2 {
				twice++
			}
		}
		if twice != n {
			t.Errorf("control: %d of %d events applied more than once, want all: applications %v", twice, n, applied)
		}
		return
	}

	want := map[string]int{}
	balances := map[string]int64{}
	for i := range n {
		want[fmt.Sprintf("evt-%d", i)] = 1
		balances[fmt.Sprintf("acct-%d", i%5)] += int64(i + 1)
	}
	if diff := cmp.Diff(want, applied); diff != "" {
		t.Errorf("applications per event (-want +got):\n%s", diff)
	}
	gotBal := map[string]int64{}
	raw, _ = rdb.HGetAll(ctx, prefix+"balances").Result()
	for k, v := range raw {
		gotBal[k], _ = strconv.ParseInt(v, 10, 64)
	}
	if diff := cmp.Diff(balances, gotBal); diff != "" {
		t.Errorf("balances (-want +got):\n%s", diff)
	}
	// evt-7 was taken over from the dead consumer A: its effect carries
	// a fence above A's.
	if f, _ := rdb.HGet(ctx, prefix+"fences", "evt-7").Int64(); f < 2 {
		t.Errorf("evt-7 applied under fence %d, want >= 2 (taken over from the crashed consumer)", f)
	}

	// Every message was settled: none ready, the ID-less one
	// dead-lettered.
	qi, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if qi.Messages != 0 {
		t.Errorf("%d messages left in %s, want 0", qi.Messages, queue)
	}
	var dead []string
	for {
		d, ok, err := ch.Get(queue+".dlq", true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		dead = append(dead, string(d.Body))
	}
	if diff := cmp.Diff([]string{bad}, dead); diff != "" {
		t.Errorf("dead letters (-want +got):\n%s", diff)
	}

	// What B saw: evt-7 redelivered (Redelivered=true: A's delivery,
	// requeued when A's connection dropped) and run once (that
	// redelivery, or the second publish if it claimed first), and
	// duplicates acked without running.
	evt7 := map[string]int{}
	dups := 0
	for _, o := range b.outcomes() {
		if o["event"] == "evt-7" {
			evt7["status="+o["status"]]++
			evt7["redelivered="+o["redelivered"]]++
		}
		if o["status"] == "duplicate" {
			dups++
		}
	}
	if evt7["status=ran"] != 1 || evt7["redelivered=true"] < 1 {
		t.Errorf("consumer B's evt-7 outcomes %v, want status=ran once and redelivered=true at least once", evt7)
	}
	t.Logf("consumer A settled %d, consumer B %d outcome lines, %d duplicates", byA, len(b.outcomes()), dups)
	if dups == 0 {
		t.Errorf("no duplicate outcome, though every event was published twice")
	}
}

// run2 runs the command in-process (the publisher).
func run2(ctx context.Context, args string) error {
	return run(ctx, strings.Fields(args), os.Stderr)
}
