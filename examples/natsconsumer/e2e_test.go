package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/testenv"
)

// TestMain lets the test binary double as the consumer: the test runs it
// as child processes, so one of them can die for real.
func TestMain(m *testing.M) {
	if args := os.Getenv("NATSCONSUMER_ARGS"); args != "" {
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

// need skips (outside CI) or fails (CI=true) when a service is missing.
func need(t *testing.T, what, hint string, err error) {
	t.Helper()
	testenv.Need(t, what, hint, err)
}

const (
	natsHint  = "Start a JetStream-enabled server: nats-server -js -a 127.0.0.1 -p 4222 (or docker run -d -p 4222:4222 nats -js), or set IDEM_NATS_URL."
	redisHint = "Start Redis: redis-server --port 6379 (or docker run -d -p 6379:6379 redis:7), or set IDEM_REDIS_ADDR."
)

// consumerProc is one consumer process and the outcome lines it printed.
type consumerProc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	outs []outcome
	done chan struct{} // closed when stdout is drained
}

type outcome struct{ Event, Status, Ack string }

var outcomeRE = regexp.MustCompile(`^outcome event=(\S*) status=(\S+) delivered=\d+ ack=(\S+)`)

func startConsumer(t *testing.T, args string) *consumerProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NATSCONSUMER_ARGS="+args)
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
			if m := outcomeRE.FindStringSubmatch(sc.Text()); m != nil {
				p.mu.Lock()
				p.outs = append(p.outs, outcome{m[1], m[2], m[3]})
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// wait waits for the process to exit and returns its exit code.
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

func (p *consumerProc) outcomes() []outcome {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]outcome(nil), p.outs...)
}

// TestExactlyOnceUnderRedelivery publishes N events (each twice, like a
// retrying producer), runs a consumer that nak's some first deliveries,
// leaves some processed messages unacked, and then dies inside a handler
// (os.Exit, no cleanup), then a second consumer that picks up every
// redelivery. Each event's side effect in Redis must have happened
// exactly once, and every message must end up acked.
func TestExactlyOnceUnderRedelivery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	natsURL := envOr("IDEM_NATS_URL", nats.DefaultURL)
	nc, err := nats.Connect(natsURL, nats.Timeout(2*time.Second))
	need(t, "NATS at "+natsURL, natsHint, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		need(t, "JetStream at "+natsURL, natsHint, err)
	}
	redisAddr := testenv.RedisAddr()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	need(t, "Redis at "+redisAddr, redisHint, rdb.Ping(ctx).Err())

	run := testenv.RandName()
	streamName := "IDEMTEST_" + strings.ToUpper(run)
	subject := "idemtest." + run + ".credits"
	prefix := "natsconsumer:test:" + run + ":"
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: streamName, Subjects: []string{subject}, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		js.DeleteStream(context.Background(), streamName) //nolint:errcheck
		keys, _ := rdb.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(context.Background(), keys...) //nolint:errcheck
		}
	})

	// N events; every event published twice (a producer retry that
	// JetStream's own dedup does not catch: no Nats-Msg-Id).
	const n = 60
	wantBalance := map[string]string{}
	sums := map[string]int64{}
	for i := range n {
		c := Credit{Account: fmt.Sprintf("acct-%d", i%4), Amount: int64(i + 1)}
		sums[c.Account] += c.Amount
		body, _ := json.Marshal(c)
		for range 2 {
			m := nats.NewMsg(subject)
			m.Header.Set(EventIDHeader, fmt.Sprintf("evt-%d", i))
			m.Data = body
			if _, err := js.PublishMsg(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	for a, s := range sums {
		wantBalance[a] = fmt.Sprint(s)
	}
	// One malformed event: no ID. It must be dead-lettered (Term), not
	// redelivered forever, and must not be applied.
	if _, err := js.Publish(ctx, subject, []byte(`{"account":"acct-0","amount":1000}`)); err != nil {
		t.Fatal(err)
	}

	common := fmt.Sprintf("-nats %s -redis %s -stream %s -subject %s -durable worker -prefix %s -ack-wait 1s -lease 1s -ttl 10m",
		natsURL, redisAddr, streamName, subject, prefix)
	// Consumer 1: one worker, so that when it dies inside evt-37's handler
	// no other handler is between its effect and its record (the one
	// window no idempotency layer can close without a transaction).
	c1 := startConsumer(t, common+" -workers 1 -chaos-crash-on evt-37 -chaos-nak-every 5 -chaos-noack-every 6 -chaos-handler-delay 5ms")
	if code := c1.wait(); code != 3 {
		t.Fatalf("consumer 1 exited with %d, want 3 (the simulated crash)", code)
	}
	applied1, _ := rdb.HLen(ctx, prefix+"applied").Result()
	t.Logf("consumer 1 crashed after applying %d events", applied1)
	if applied1 == 0 || applied1 >= n {
		t.Fatalf("consumer 1 applied %d events before crashing; the crash should come mid-stream", applied1)
	}

	// Consumer 2: a restarted instance with more workers.
	c2 := startConsumer(t, common+" -workers 4 -chaos-nak-every 5")
	defer func() {
		if c2.cmd.ProcessState == nil {
			c2.cmd.Process.Kill()
		}
	}()
	cons, err := stream.Consumer(ctx, "worker")
	if err != nil {
		t.Fatal(err)
	}
	settled := func() bool {
		info, err := cons.Info(ctx)
		if err != nil {
			return false
		}
		applied, _ := rdb.HLen(ctx, prefix+"applied").Result()
		return applied == n && info.NumPending == 0 && info.NumAckPending == 0
	}
	for !settled() {
		if ctx.Err() != nil {
			t.Fatal("consumers did not settle in time")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Longer than ack wait + lease: any stray redelivery would land now.
	time.Sleep(2500 * time.Millisecond)
	if !settled() {
		t.Error("not settled after the grace period")
	}
	c2.cmd.Process.Signal(syscall.SIGTERM)
	if code := c2.wait(); code != 0 {
		t.Errorf("consumer 2 exited with %d", code)
	}

	// Every event applied exactly once, and the balances add up.
	applied, err := rdb.HGetAll(ctx, prefix+"applied").Result()
	if err != nil {
		t.Fatal(err)
	}
	wantApplied := map[string]string{}
	for i := range n {
		wantApplied[fmt.Sprintf("evt-%d", i)] = "1"
	}
	if diff := cmp.Diff(wantApplied, applied); diff != "" {
		t.Errorf("applications per event (-want +got):\n%s", diff)
	}
	balances, _ := rdb.HGetAll(ctx, prefix+"balances").Result()
	if diff := cmp.Diff(wantBalance, balances); diff != "" {
		t.Errorf("balances (-want +got):\n%s", diff)
	}
	// The crashed consumer held evt-37 with fence 1; whoever applied it
	// took it over, so with a higher fence.
	if fence37, _ := rdb.HGet(ctx, prefix+"fences", "evt-37").Int(); fence37 < 2 {
		t.Errorf("evt-37 applied with fence %d, want >= 2 (taken over from the crashed consumer)", fence37)
	}

	// What the consumers saw: each event ran once in all; the rest of the
	// deliveries were duplicates (acked), failures (nak'ed) or the
	// malformed event (terminated).
	count := map[string]int{}
	ranPer := map[string]int{}
	for _, o := range append(c1.outcomes(), c2.outcomes()...) {
		count[o.Status+"/"+o.Ack]++
		if o.Status == "ran" {
			ranPer[o.Event]++
		}
	}
	t.Logf("outcomes: %v", count)
	if len(ranPer) != n {
		t.Errorf("%d events ran, want %d", len(ranPer), n)
	}
	for e, k := range ranPer {
		if k != 1 {
			t.Errorf("%s ran %d times", e, k)
		}
	}
	if count["duplicate/ack"] < n || count["failed/nak"] == 0 || count["ran/none"] == 0 || count["failed/term"] != 1 {
		t.Errorf("the run did not exercise duplicates (>= %d), naks, unacked runs and one term: %v", n, count)
	}
}
