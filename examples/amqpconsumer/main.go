// Command amqpconsumer is a RabbitMQ consumer that credits account
// balances in Redis once per event, though RabbitMQ delivers at least
// once: a consumer that dies with deliveries unacked (RabbitMQ requeues
// them when its channel closes) or a producer that published an event
// twice reaches the side effect at most once, because every delivery goes
// through runtime/idemamqp (idemqueue on the Redis store), which acks,
// requeues or dead-letters it by idemqueue's rules.
//
//	go run ./examples/amqpconsumer -publish 100   # declare the queues, publish demo events (each twice)
//	go run ./examples/amqpconsumer                # consume them (Ctrl-C to stop)
//
// See README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemamqp"
	"github.com/idemgen/idemgen/runtime/idemcall"
	"github.com/idemgen/idemgen/runtime/idemqueue"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "amqpconsumer:", err)
		os.Exit(1)
	}
}

// Credit is the event: credit an account's balance.
type Credit struct {
	Account string `json:"account"`
	Amount  int64  `json:"amount"`
}

type config struct {
	amqpURL, redisAddr string
	queue, prefix      string
	workers, prefetch  int
	lease              time.Duration
	publish            int
	unguarded          bool
	chaosCrashOn       string
	chaosHandlerDelay  time.Duration
}

func parse(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("amqpconsumer", flag.ContinueOnError)
	fs.StringVar(&c.amqpURL, "amqp", envOr("IDEM_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/"), "RabbitMQ URL")
	fs.StringVar(&c.redisAddr, "redis", envOr("IDEM_REDIS_ADDR", "127.0.0.1:6379"), "Redis address")
	fs.StringVar(&c.queue, "queue", "credits", "queue of the events (declared with a dead-letter queue QUEUE.dlq if missing)")
	fs.StringVar(&c.prefix, "prefix", "amqpconsumer:", "Redis key prefix of the idempotency records and the balances")
	fs.IntVar(&c.workers, "workers", 4, "deliveries processed concurrently")
	fs.IntVar(&c.prefetch, "prefetch", 8, "unacked deliveries this consumer holds at most (Channel.Qos; at least -workers)")
	fs.DurationVar(&c.lease, "lease", 5*time.Second, "idempotency lease: how soon a crashed consumer's event can be taken over")
	fs.IntVar(&c.publish, "publish", 0, "publish this many demo events (each twice, as a retrying producer would) and exit")
	fs.BoolVar(&c.unguarded, "unguarded", false, "apply every delivery and ack it, without idemamqp: shows the duplicates it prevents")
	fs.StringVar(&c.chaosCrashOn, "chaos-crash-on", "", "exit abruptly inside the handler of this event ID, before its effect (testing)")
	fs.DurationVar(&c.chaosHandlerDelay, "chaos-handler-delay", 0, "make every handler this slow (testing)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.workers < 1 || c.prefetch < c.workers {
		return c, errors.New("-workers must be at least 1 and -prefetch at least -workers")
	}
	return c, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// declare declares the queue and its dead-letter queue: a message
// rejected without requeue (a permanent failure: no ID) goes through the
// default exchange to QUEUE.dlq.
func declare(ch *amqp.Channel, queue string) error {
	if _, err := ch.QueueDeclare(queue+".dlq", true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare %s.dlq: %w", queue, err)
	}
	_, err := ch.QueueDeclare(queue, true, false, false, false, amqp.Table{
		"x-dead-letter-exchange":    "",
		"x-dead-letter-routing-key": queue + ".dlq",
	})
	if err != nil {
		return fmt.Errorf("declare %s: %w", queue, err)
	}
	return nil
}

func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := parse(args)
	if err != nil {
		return err
	}
	conn, err := amqp.Dial(cfg.amqpURL)
	if err != nil {
		return err
	}
	defer conn.Close()
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := declare(ch, cfg.queue); err != nil {
		return err
	}
	if cfg.publish > 0 {
		return publish(ctx, ch, cfg.queue, cfg.publish, out)
	}

	rdb := redis.NewClient(&redis.Options{Addr: cfg.redisAddr})
	defer rdb.Close()

	var mu sync.Mutex // serializes output lines
	printf := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format, a...)
	}
	apply := func(ctx context.Context, d amqp.Delivery) error {
		id := d.MessageId
		if cfg.chaosCrashOn != "" && id == cfg.chaosCrashOn {
			// A hard crash inside the handler: no release, no ack; the
			// connection drops and RabbitMQ requeues every unacked
			// delivery of this consumer.
			os.Exit(3)
		}
		if cfg.chaosHandlerDelay > 0 {
			time.Sleep(cfg.chaosHandlerDelay)
		}
		var c Credit
		if err := json.Unmarshal(d.Body, &c); err != nil || c.Account == "" {
			return fmt.Errorf("bad credit event %q: %v", d.Body, err)
		}
		fence, _ := idem.FenceFrom(ctx) // 0 when -unguarded
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HIncrBy(ctx, cfg.prefix+"balances", c.Account, c.Amount)
			p.HIncrBy(ctx, cfg.prefix+"applied", id, 1)
			p.HSet(ctx, cfg.prefix+"fences", id, fence)
			return nil
		})
		return err
	}

	if err := ch.Qos(cfg.prefetch, 0, false); err != nil {
		return err
	}
	deliveries, err := ch.ConsumeWithContext(ctx, cfg.queue, "", false, false, false, false, nil)
	if err != nil {
		return err
	}
	printf("consuming queue=%s unguarded=%t\n", cfg.queue, cfg.unguarded)
	if cfg.unguarded {
		err = runUnguarded(ctx, deliveries, apply, printf)
	} else {
		st, serr := redisstore.New(ctx, rdb, redisstore.WithKeyPrefix(cfg.prefix))
		if serr != nil {
			return serr
		}
		defer st.Close()
		q := idemqueue.New(idem.NewGuard(st), idemcall.WithName("credits"), idemcall.WithLease(cfg.lease))
		c := idemamqp.New(q, idemamqp.WithOutcome(func(d amqp.Delivery, o idemamqp.Outcome, err error) {
			line := fmt.Sprintf("outcome event=%s status=%s action=%s redelivered=%t", o.ID, o.Status, o.Action, d.Redelivered)
			if err != nil {
				line += fmt.Sprintf(" err=%q", err.Error())
			}
			printf("%s\n", line)
		}))
		err = c.Run(ctx, deliveries, cfg.workers, apply)
	}
	switch {
	case ctx.Err() != nil:
		return nil // Ctrl-C or SIGTERM: running handlers finished
	case err != nil:
		return err
	}
	// The deliveries channel closed: the connection or channel was lost.
	select {
	case e := <-closed:
		return fmt.Errorf("connection closed: %v", e)
	default:
		return errors.New("deliveries stopped: channel closed by the broker")
	}
}

// runUnguarded is what a consumer without idemamqp does: apply, then ack
// (or requeue on error). Every redelivery and every duplicate publish runs
// the side effect again.
func runUnguarded(ctx context.Context, deliveries <-chan amqp.Delivery, apply func(context.Context, amqp.Delivery) error, printf func(string, ...any)) error {
	hctx := context.WithoutCancel(ctx)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case d, ok := <-deliveries:
			if !ok {
				return nil
			}
			action := "ack"
			if err := apply(hctx, d); err != nil {
				action = "requeue"
				_ = d.Nack(false, true) // if it fails, RabbitMQ requeues when the channel closes
			} else if err := d.Ack(false); err != nil {
				return err
			}
			printf("outcome event=%s status=unguarded action=%s redelivered=%t\n", d.MessageId, action, d.Redelivered)
		}
	}
}

// publish sends n credit events, each twice (a retrying producer), with
// their event ID as the MessageId property, and waits for the broker's
// confirms.
func publish(ctx context.Context, ch *amqp.Channel, queue string, n int, out io.Writer) error {
	if err := ch.Confirm(false); err != nil {
		return err
	}
	var confirms []*amqp.DeferredConfirmation
	for range 2 {
		for i := range n {
			body, _ := json.Marshal(Credit{Account: fmt.Sprintf("acct-%d", i%5), Amount: int64(i + 1)})
			dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, amqp.Publishing{
				MessageId: fmt.Sprintf("evt-%d", i), ContentType: "application/json",
				DeliveryMode: amqp.Persistent, Body: body,
			})
			if err != nil {
				return err
			}
			confirms = append(confirms, dc)
		}
	}
	for _, dc := range confirms {
		ok, err := dc.WaitContext(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("publish to %s: nacked by the broker", queue)
		}
	}
	fmt.Fprintf(out, "published %d events twice to %s\n", n, queue)
	return nil
}
