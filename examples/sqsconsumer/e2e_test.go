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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/testenv"
)

// TestMain lets the test binary double as the consumer: the test runs it
// as child processes, so one of them can die for real.
func TestMain(m *testing.M) {
	if args := os.Getenv("SQSCONSUMER_ARGS"); args != "" {
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
	sqsHint   = "Start the SQS server: scripts/sqs.sh (make services does it), or set IDEM_SQS_ENDPOINT."
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
	cmd.Env = append(os.Environ(), "SQSCONSUMER_ARGS="+args)
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

// settled counts the messages a consumer deleted or dead-lettered (a
// message left in flight comes back, and so does one whose DeleteMessage
// failed: idemsqs reports that error with its own prefix).
func settled(outcomes []map[string]string) int {
	n := 0
	for _, o := range outcomes {
		if (o["action"] == "delete" || o["action"] == "dead-letter") && !strings.Contains(o["err"], "idemsqs: ") {
			n++
		}
	}
	return n
}

// TestExactlyOnceUnderRedelivery sends N events twice each (a retrying
// producer: two SQS MessageIds, one event-id attribute) and one message
// without an ID to a queue whose visibility timeout is 2s. A consumer dies
// inside evt-7's handler (os.Exit: no delete, lease held), so SQS
// redelivers evt-7 when its visibility timeout ends; a second consumer
// takes it over once the dead consumer's lease expired, and runs evt-15's
// handler for 4s, twice the queue's visibility timeout, while idemsqs's
// heartbeat keeps that message invisible. Through idemsqs, each event must
// be applied exactly once, the balances must add up, the slow message must
// be received once, every message must be deleted, and the ID-less one
// must be in the dead-letter queue. The control runs the same without
// idemsqs and must show every event applied at least twice and evt-15's
// message redelivered under its running handler: the assertions above see
// a double delivery.
func TestExactlyOnceUnderRedelivery(t *testing.T) {
	tests := []struct {
		name        string
		flags       string
		exactlyOnce bool
	}{
		{"idemsqs", "", true},
		{"control without idemsqs", "-unguarded", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { testRedelivery(t, tt.flags, tt.exactlyOnce) })
	}
}

func testRedelivery(t *testing.T, flags string, exactlyOnce bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	endpoint := envOr("IDEM_SQS_ENDPOINT", "http://127.0.0.1:4100")
	client := newClient(endpoint)
	redisAddr := envOr("IDEM_REDIS_ADDR", "127.0.0.1:6379")
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	testenv.Need(t, "Redis at "+redisAddr, redisHint, rdb.Ping(ctx).Err())

	run := testenv.RandName()
	queue, prefix := "sqsconsumer-test-"+run, "sqsconsumer-test:"+run+":"
	url, dlqURL, err := createQueues(ctx, client, queue, 2*time.Second)
	testenv.Need(t, "SQS at "+endpoint, sqsHint, err)
	t.Cleanup(func() {
		client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})    //nolint:errcheck
		client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(dlqURL)}) //nolint:errcheck
		keys, _ := rdb.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(context.Background(), keys...)
		}
	})

	const n = 20
	common := fmt.Sprintf("-endpoint %s -redis %s -queue %s -prefix %s -queue-visibility 2s -visibility 3s -lease 2s %s",
		endpoint, redisAddr, queue, prefix, flags)
	if err := run2(ctx, fmt.Sprintf("%s -send %d", common, n)); err != nil {
		t.Fatal(err)
	}
	const bad = `{"account":"acct-0","amount":1000}`
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(bad)}); err != nil {
		t.Fatal(err)
	}
	total := 2*n + 1

	// Consumer A handles one message at a time, so its crash lands inside
	// evt-7's handler and in no other handler's window between its side
	// effect and the store's record of it (the window idemqueue documents:
	// docs/QUEUES.md, "Crashes and redelivery").
	a := startConsumer(t, common+" -workers 1 -chaos-crash-on evt-7")
	if code := a.wait(); code != 3 {
		t.Fatalf("consumer A exited with %d, want 3 (the crash inside evt-7's handler)", code)
	}
	byA := settled(a.outcomes())
	b := startConsumer(t, common+" -workers 4 -chaos-slow-on evt-15 -chaos-slow 4s")

	applied := func() map[string]int {
		m := map[string]int{}
		raw, err := rdb.HGetAll(ctx, prefix+"applied").Result()
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range raw {
			if strings.HasPrefix(k, "evt-") {
				m[k], _ = strconv.Atoi(v)
			}
		}
		return m
	}
	if !exactlyOnce {
		// Without idemsqs: both sends of every event run the side effect,
		// and evt-15's message, slower than the visibility timeout with
		// no heartbeat, is redelivered and applied again while it runs.
		controlDone := func(m map[string]int) bool {
			for i := range n {
				if m[fmt.Sprintf("evt-%d", i)] < 2 {
					return false
				}
			}
			return m["evt-15"] >= 3
		}
		deadline := time.Now().Add(15 * time.Second)
		for !controlDone(applied()) && time.Now().Before(deadline) && !b.exited() {
			time.Sleep(100 * time.Millisecond)
		}
		if m := applied(); !controlDone(m) {
			t.Errorf("control: applications %v, want every event at least 2 and evt-15 at least 3", m)
		}
		return // the cleanup kills B
	}

	// Wait until B deleted every message A did not.
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

	want := map[string]int{}
	balances := map[string]int64{}
	for i := range n {
		want[fmt.Sprintf("evt-%d", i)] = 1
		balances[fmt.Sprintf("acct-%d", i%5)] += int64(i + 1)
	}
	if diff := cmp.Diff(want, applied()); diff != "" {
		t.Errorf("applications per event (-want +got):\n%s", diff)
	}
	gotBal := map[string]int64{}
	raw, _ := rdb.HGetAll(ctx, prefix+"balances").Result()
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

	// evt-15's handler ran once, for 4s on a 2s queue: the heartbeat
	// extended its message's visibility, and that message was received
	// (had an outcome) once.
	outs := b.outcomes()
	var slow map[string]string
	receives := map[string]int{} // by SQS MessageId
	dups := 0
	for _, o := range outs {
		receives[o["msgid"]]++
		if o["event"] == "evt-15" && o["status"] == "ran" {
			slow = o
		}
		if o["status"] == "duplicate" {
			dups++
		}
	}
	if slow == nil {
		t.Fatalf("consumer B: no ran outcome for evt-15")
	}
	if hb, _ := strconv.Atoi(slow["heartbeats"]); hb < 1 || receives[slow["msgid"]] != 1 {
		t.Errorf("evt-15's message %s: %d heartbeats, received %d times; want >= 1 heartbeat and 1 receive", slow["msgid"], hb, receives[slow["msgid"]])
	}

	// Every message was deleted, the ID-less one to the dead-letter queue.
	qa, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]string{}
	for k, v := range qa.Attributes {
		if v != "0" {
			left[k] = v
		}
	}
	if len(left) > 0 {
		t.Errorf("messages left in %s: %v, want none", queue, left)
	}
	rd, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlqURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	var dead []string
	for _, m := range rd.Messages {
		dead = append(dead, aws.ToString(m.Body))
	}
	if diff := cmp.Diff([]string{bad}, dead); diff != "" {
		t.Errorf("dead letters (-want +got):\n%s", diff)
	}
	t.Logf("consumer A settled %d, consumer B %d outcome lines, %d duplicates; evt-15: %s heartbeats", byA, len(outs), dups, slow["heartbeats"])
	if dups == 0 {
		t.Errorf("no duplicate outcome, though every event was sent twice")
	}
}

// run2 runs the command in-process (the producer).
func run2(ctx context.Context, args string) error {
	return run(ctx, strings.Fields(args), os.Stderr)
}
