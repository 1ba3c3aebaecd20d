// Command natsconsumer is a NATS JetStream consumer that applies each
// event once, though JetStream delivers at least once: redeliveries after
// an ack timeout, a nak, a consumer crash, or a producer that published
// twice all reach the handler's side effect at most once, because every
// event goes through idemqueue.Consumer.ProcessPayload on the Redis store.
//
//	go run ./examples/natsconsumer -publish 100   # create the stream, publish demo events
//	go run ./examples/natsconsumer                # consume them (Ctrl-C to stop)
//
// See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemcall"
	"github.com/idemgen/idemgen/runtime/idemqueue"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "natsconsumer:", err)
		os.Exit(1)
	}
}

type config struct {
	natsURL, redisAddr        string
	stream, subject, durable  string
	prefix                    string
	workers                   int
	ackWait, lease, ttl       time.Duration
	publish                   int
	chaosCrashOn              string
	chaosNakEvery, chaosNoAck uint
	chaosHandlerDelay         time.Duration
}

func parse(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("natsconsumer", flag.ContinueOnError)
	fs.StringVar(&c.natsURL, "nats", envOr("IDEM_NATS_URL", nats.DefaultURL), "NATS server URL")
	fs.StringVar(&c.redisAddr, "redis", envOr("IDEM_REDIS_ADDR", "127.0.0.1:6379"), "Redis address")
	fs.StringVar(&c.stream, "stream", "CREDITS", "JetStream stream (created with file storage if missing)")
	fs.StringVar(&c.subject, "subject", "credits.events", "subject of the events")
	fs.StringVar(&c.durable, "durable", "credits-worker", "durable consumer name (shared by all instances)")
	fs.StringVar(&c.prefix, "prefix", "natsconsumer:", "Redis key prefix of the idempotency records and the balances")
	fs.IntVar(&c.workers, "workers", 4, "messages processed concurrently")
	fs.DurationVar(&c.ackWait, "ack-wait", 5*time.Second, "JetStream AckWait: redelivery after this long without an ack")
	fs.DurationVar(&c.lease, "lease", 5*time.Second, "idempotency lease: how soon a crashed consumer's events can be taken over")
	fs.DurationVar(&c.ttl, "ttl", 24*time.Hour, "how long processed event IDs are remembered")
	fs.IntVar(&c.publish, "publish", 0, "publish this many demo events (each twice, as a retrying producer would) and exit")
	fs.StringVar(&c.chaosCrashOn, "chaos-crash-on", "", "exit abruptly inside the handler of this event ID, before its effect (testing)")
	fs.UintVar(&c.chaosNakEvery, "chaos-nak-every", 0, "fail the first delivery of every n-th event (by hash), so it is nak'ed (testing)")
	fs.UintVar(&c.chaosNoAck, "chaos-noack-every", 0, "process every n-th event (by hash) but do not ack its first delivery (testing)")
	fs.DurationVar(&c.chaosHandlerDelay, "chaos-handler-delay", 0, "make every handler this slow (testing)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.workers < 1 {
		return c, errors.New("-workers must be at least 1")
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := parse(args)
	if err != nil {
		return err
	}
	nc, err := nats.Connect(cfg.natsURL, nats.Name("idemgen-natsconsumer"))
	if err != nil {
		return fmt.Errorf("nats %s: %w", cfg.natsURL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	stream, err := ensureStream(ctx, js, cfg)
	if err != nil {
		return err
	}
	if cfg.publish > 0 {
		return publishDemo(ctx, js, cfg, stdout)
	}

	rdb := redis.NewClient(&redis.Options{Addr: cfg.redisAddr})
	defer rdb.Close()
	store, err := redisstore.New(ctx, rdb, redisstore.WithKeyPrefix(cfg.prefix)) // PINGs Redis
	if err != nil {
		return err
	}
	defer store.Close()
	g := idem.NewGuard(store)
	w := &worker{
		cfg: cfg,
		rdb: rdb,
		out: stdout,
		consumer: idemqueue.New(g,
			idemcall.WithName("natsconsumer.credits"),
			idemcall.WithLease(cfg.lease),
			idemcall.WithTTL(cfg.ttl),
			// Wait for a concurrent delivery of the same event at most
			// a little less than the ack wait, then nak.
			idemcall.WithWait(max(cfg.ackWait*3/4, 100*time.Millisecond))),
	}
	return w.consume(ctx, js, stream)
}

func ensureStream(ctx context.Context, js jetstream.JetStream, cfg config) (jetstream.Stream, error) {
	s, err := js.Stream(ctx, cfg.stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: cfg.stream, Subjects: []string{cfg.subject}, Storage: jetstream.FileStorage})
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", cfg.stream, err)
	}
	return s, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
