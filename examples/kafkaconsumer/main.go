// Command kafkaconsumer is a Kafka consumer group member that credits
// account balances in Redis once per event, though Kafka delivers at least
// once: a consumer that dies or loses its partitions before committing, or
// a producer that sent an event twice, reaches the side effect at most
// once, because every record goes through runtime/idemkafka (idemqueue on
// the Redis store), and offsets are committed only past records that are
// done.
//
//	scripts/kafka.sh                                  # the Kafka-protocol broker (kfake)
//	go run ./examples/kafkaconsumer -produce 100       # produce demo events (each twice)
//	go run ./examples/kafkaconsumer                    # consume them (Ctrl-C to stop)
//
// See README.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemcall"
	"github.com/idemgen/idemgen/runtime/idemkafka"
	"github.com/idemgen/idemgen/runtime/idemqueue"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kafkaconsumer:", err)
		os.Exit(1)
	}
}

// Credit is the event: credit an account's balance.
type Credit struct {
	Account string `json:"account"`
	Amount  int64  `json:"amount"`
}

type config struct {
	brokers, redisAddr string
	topic, group, dlq  string
	prefix             string
	lease              time.Duration
	produce            int
	chaosCrashOn       string
	chaosHandlerDelay  time.Duration
	sessionTimeout     time.Duration
}

func parse(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("kafkaconsumer", flag.ContinueOnError)
	fs.StringVar(&c.brokers, "brokers", envOr("IDEM_KAFKA_BROKERS", "127.0.0.1:9092"), "comma-separated seed brokers")
	fs.StringVar(&c.redisAddr, "redis", envOr("IDEM_REDIS_ADDR", "127.0.0.1:6379"), "Redis address")
	fs.StringVar(&c.topic, "topic", "credits", "topic of the events")
	fs.StringVar(&c.group, "group", "credits-worker", "consumer group (shared by all instances)")
	fs.StringVar(&c.dlq, "dlq", "credits.dlq", "dead-letter topic of events that fail permanently (no ID, ID reused with another payload)")
	fs.StringVar(&c.prefix, "prefix", "kafkaconsumer:", "Redis key prefix of the idempotency records and the balances")
	fs.DurationVar(&c.lease, "lease", 5*time.Second, "idempotency lease: how soon a crashed consumer's event can be taken over")
	fs.DurationVar(&c.sessionTimeout, "session-timeout", 6*time.Second, "group session timeout: how soon a crashed consumer's partitions move")
	fs.IntVar(&c.produce, "produce", 0, "produce this many demo events (each twice, as a retrying producer would) and exit")
	fs.StringVar(&c.chaosCrashOn, "chaos-crash-on", "", "exit abruptly inside the handler of this event ID, before its effect (testing)")
	fs.DurationVar(&c.chaosHandlerDelay, "chaos-handler-delay", 0, "make every handler this slow (testing)")
	err := fs.Parse(args)
	return c, err
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := parse(args)
	if err != nil {
		return err
	}
	brokers := strings.Split(cfg.brokers, ",")
	if cfg.produce > 0 {
		return produce(ctx, brokers, cfg.topic, cfg.produce, out)
	}
	rdb := redis.NewClient(&redis.Options{Addr: cfg.redisAddr})
	defer rdb.Close()
	st, err := redisstore.New(ctx, rdb, redisstore.WithKeyPrefix(cfg.prefix))
	if err != nil {
		return err
	}
	defer st.Close()
	q := idemqueue.New(idem.NewGuard(st), idemcall.WithName("credits"), idemcall.WithLease(cfg.lease))

	var mu sync.Mutex // serializes output lines
	printf := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format, a...)
	}
	apply := func(ctx context.Context, r *kgo.Record) error {
		id := idemkafka.HeaderID(idemkafka.DefaultIDHeaders...)(r)
		if id == cfg.chaosCrashOn {
			// A hard crash inside the handler: no release, no commit, no
			// heartbeat from now on.
			os.Exit(3)
		}
		if cfg.chaosHandlerDelay > 0 {
			time.Sleep(cfg.chaosHandlerDelay)
		}
		var c Credit
		if err := json.Unmarshal(r.Value, &c); err != nil || c.Account == "" {
			return fmt.Errorf("bad credit event %q: %v", r.Value, err)
		}
		fence, _ := idem.FenceFrom(ctx)
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HIncrBy(ctx, cfg.prefix+"balances", c.Account, c.Amount)
			p.HIncrBy(ctx, cfg.prefix+"applied", id, 1)
			p.HSet(ctx, cfg.prefix+"fences", id, fence)
			return nil
		})
		return err
	}
	c, err := idemkafka.New(q, apply,
		idemkafka.WithBrokers(brokers...), idemkafka.WithGroup(cfg.group), idemkafka.WithTopics(cfg.topic),
		idemkafka.WithClientOptions(
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.AllowAutoTopicCreation(), // the dead-letter topic
			kgo.SessionTimeout(cfg.sessionTimeout),
			kgo.HeartbeatInterval(cfg.sessionTimeout/10),
			kgo.FetchMaxWait(500*time.Millisecond),
		),
		idemkafka.WithDeadLetterTopic(cfg.dlq),
		idemkafka.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
		idemkafka.WithOutcome(func(o idemkafka.Outcome) {
			line := fmt.Sprintf("outcome event=%s status=%s partition=%d offset=%d attempt=%d dead=%t",
				o.ID, o.Status, o.Record.Partition, o.Record.Offset, o.Attempt, o.Dead)
			if o.Err != nil {
				line += fmt.Sprintf(" err=%q", o.Err.Error())
			}
			printf("%s\n", line)
		}))
	if err != nil {
		return err
	}
	printf("consuming topic=%s group=%s\n", cfg.topic, cfg.group)
	return c.Run(ctx)
}

// produce sends n credit events, each twice (a retrying producer), with
// their event ID in the idempotency-key header.
func produce(ctx context.Context, brokers []string, topic string, n int, out io.Writer) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.AllowAutoTopicCreation())
	if err != nil {
		return err
	}
	defer cl.Close()
	var rs []*kgo.Record
	for range 2 {
		for i := range n {
			id := fmt.Sprintf("evt-%d", i)
			v, _ := json.Marshal(Credit{Account: fmt.Sprintf("acct-%d", i%5), Amount: int64(i + 1)})
			rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(id), Value: v,
				Headers: []kgo.RecordHeader{{Key: "idempotency-key", Value: []byte(id)}}})
		}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		return err
	}
	fmt.Fprintf(out, "produced %d events twice to %s\n", n, topic)
	return nil
}
