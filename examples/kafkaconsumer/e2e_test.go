package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
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
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/idemgen/idemgen/internal/testenv"
)

// TestMain lets the test binary double as the consumer: the test runs it
// as child processes, so one of them can die for real.
func TestMain(m *testing.M) {
	if args := os.Getenv("KAFKACONSUMER_ARGS"); args != "" {
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
	kafkaHint = "Start the Kafka-protocol broker: scripts/kafka.sh (make services), or set IDEM_KAFKA_BROKERS."
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
	cmd.Env = append(os.Environ(), "KAFKACONSUMER_ARGS="+args)
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

// TestExactlyOnceUnderRedelivery produces N events twice each (a retrying
// producer) and one record without an ID, runs a consumer that dies inside
// a handler (os.Exit: no commit, lease held), then a second one that picks
// up from the last commit. Each event must be applied exactly once, the
// balances must add up, and the bad record must be on the dead-letter
// topic.
func TestExactlyOnceUnderRedelivery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	brokers := envOr("IDEM_KAFKA_BROKERS", "127.0.0.1:9092")
	conn, err := net.DialTimeout("tcp", strings.Split(brokers, ",")[0], 2*time.Second)
	if err == nil {
		conn.Close()
	}
	testenv.Need(t, "the Kafka broker at "+brokers, kafkaHint, err)
	rdb := redis.NewClient(&redis.Options{Addr: envOr("IDEM_REDIS_ADDR", "127.0.0.1:6379")})
	defer rdb.Close()
	testenv.Need(t, "Redis", redisHint, rdb.Ping(ctx).Err())

	run := testenv.RandName()
	topic, dlq, group, prefix := "credits-"+run, "credits-"+run+".dlq", "credits-"+run, "kafkaconsumer-test:"+run+":"
	t.Cleanup(func() {
		keys, _ := rdb.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(context.Background(), keys...)
		}
	})
	// One partition: consumer A handles one record at a time, so its
	// crash lands inside evt-7's handler and in no other handler's
	// window between its side effect and the store's record of it (the
	// window idemqueue documents: see docs/QUEUES.md).
	{
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
		if err != nil {
			t.Fatal(err)
		}
		_, err = kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic)
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	const n = 40
	if err := run2(ctx, fmt.Sprintf("-brokers %s -topic %s -produce %d", brokers, topic, n)); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(`{"account":"acct-0","amount":1000}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	common := fmt.Sprintf("-brokers %s -redis %s -topic %s -group %s -dlq %s -prefix %s -lease 2s -session-timeout 2s",
		brokers, envOr("IDEM_REDIS_ADDR", "127.0.0.1:6379"), topic, group, dlq, prefix)
	// Consumer A owns every partition and dies inside evt-7's handler.
	a := startConsumer(t, common+" -chaos-crash-on evt-7 -chaos-handler-delay 10ms")
	if code := a.wait(); code != 3 {
		t.Fatalf("consumer A exited with %d, want 3 (the crash inside evt-7's handler)", code)
	}
	b := startConsumer(t, common)
	want := map[string]string{}
	balances := map[string]int64{}
	for i := range n {
		want[fmt.Sprintf("evt-%d", i)] = "1"
		balances[fmt.Sprintf("acct-%d", i%5)] += int64(i + 1)
	}
	var applied map[string]string
	for {
		applied, _ = rdb.HGetAll(ctx, prefix+"applied").Result()
		if len(applied) >= n || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if diff := cmp.Diff(want, applied); diff != "" {
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

	rd, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var dead []string
	for len(dead) == 0 && ctx.Err() == nil {
		rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) { dead = append(dead, string(r.Value)) })
	}
	if diff := cmp.Diff([]string{`{"account":"acct-0","amount":1000}`}, dead); diff != "" {
		t.Errorf("dead letters (-want +got):\n%s", diff)
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	if code := b.wait(); code != 0 {
		t.Errorf("consumer B exited with %d after SIGTERM, want 0", code)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	dups := 0
	for _, l := range b.lines {
		if strings.Contains(l, "status=duplicate") {
			dups++
		}
	}
	t.Logf("consumer B: %d outcome lines, %d duplicates (the producer's second sends, and what A ran but did not commit)", len(b.lines)-1, dups)
	if dups == 0 {
		t.Errorf("no duplicate outcome, though every event was sent twice")
	}
}

// run2 runs the command in-process (the producer).
func run2(ctx context.Context, args string) error {
	return run(ctx, strings.Fields(args), os.Stderr)
}
