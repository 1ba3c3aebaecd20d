// Command sqsconsumer is an Amazon SQS consumer that credits account
// balances in Redis once per event, though SQS delivers at least once: a
// message whose visibility timeout ends (a consumer that died, or a
// handler slower than the timeout) and a producer that sent an event twice
// reach the side effect at most once, because every message goes through
// runtime/idemsqs (idemqueue on the Redis store), whose heartbeat keeps a
// running handler's message invisible, and which deletes a message only
// once it is done.
//
//	scripts/sqs.sh                              # the SQS server (sqsemu) on 127.0.0.1:4100
//	go run ./examples/sqsconsumer -send 100      # create the queues, send demo events (each twice)
//	go run ./examples/sqsconsumer                # consume them (Ctrl-C to stop)
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
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemcall"
	"github.com/idemgen/idemgen/runtime/idemqueue"
	"github.com/idemgen/idemgen/runtime/idemsqs"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sqsconsumer:", err)
		os.Exit(1)
	}
}

// Credit is the event: credit an account's balance.
type Credit struct {
	Account string `json:"account"`
	Amount  int64  `json:"amount"`
}

// idAttribute is the message attribute that carries the event ID, set
// once per event by the producer (SQS's own MessageId changes when a
// producer sends the same event again).
const idAttribute = "event-id"

type config struct {
	endpoint, redisAddr       string
	queue, prefix             string
	workers                   int
	queueVisibility           time.Duration
	visibility, lease         time.Duration
	send                      int
	unguarded                 bool
	chaosCrashOn, chaosSlowOn string
	chaosSlow                 time.Duration
}

func parse(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("sqsconsumer", flag.ContinueOnError)
	fs.StringVar(&c.endpoint, "endpoint", envOr("IDEM_SQS_ENDPOINT", "http://127.0.0.1:4100"), "SQS endpoint (the emulator of scripts/sqs.sh)")
	fs.StringVar(&c.redisAddr, "redis", envOr("IDEM_REDIS_ADDR", "127.0.0.1:6379"), "Redis address")
	fs.StringVar(&c.queue, "queue", "credits", "queue of the events (created with a dead-letter queue QUEUE-dlq if missing)")
	fs.StringVar(&c.prefix, "prefix", "sqsconsumer:", "Redis key prefix of the idempotency records and the balances")
	fs.IntVar(&c.workers, "workers", 4, "messages processed concurrently")
	fs.DurationVar(&c.queueVisibility, "queue-visibility", 10*time.Second, "the queue's VisibilityTimeout, when this creates it (whole seconds)")
	fs.DurationVar(&c.visibility, "visibility", 15*time.Second, "visibility timeout the heartbeat extends a running message to, every third of it (idemsqs.WithVisibility; 0: no heartbeat)")
	fs.DurationVar(&c.lease, "lease", 5*time.Second, "idempotency lease: how soon a crashed consumer's event can be taken over (below -visibility)")
	fs.IntVar(&c.send, "send", 0, "send this many demo events (each twice, as a retrying producer would) and exit")
	fs.BoolVar(&c.unguarded, "unguarded", false, "apply every message and delete it, without idemsqs: shows the duplicates it prevents")
	fs.StringVar(&c.chaosCrashOn, "chaos-crash-on", "", "exit abruptly inside the handler of this event ID, before its effect (testing)")
	fs.StringVar(&c.chaosSlowOn, "chaos-slow-on", "", "make the handler of this event ID slow (testing)")
	fs.DurationVar(&c.chaosSlow, "chaos-slow", 5*time.Second, "how slow -chaos-slow-on's handler is")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.workers < 1 {
		return c, errors.New("-workers must be at least 1")
	}
	if !c.unguarded && c.visibility > 0 && c.lease >= c.visibility {
		return c, errors.New("-lease must be below -visibility: a redelivery after a crash must outwait the dead consumer's lease before its own visibility timeout ends")
	}
	return c, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// newClient returns an SQS client of the endpoint. The emulator checks no
// credentials; against AWS, build the client from
// config.LoadDefaultConfig (github.com/aws/aws-sdk-go-v2/config) instead.
func newClient(endpoint string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       envOr("AWS_REGION", "us-east-1"),
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
}

// createQueues creates the queue and its dead-letter queue (CreateQueue
// returns the existing queue's URL when the attributes match).
func createQueues(ctx context.Context, c *sqs.Client, queue string, visibility time.Duration) (url, dlqURL string, err error) {
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(queue + "-dlq")})
	if err != nil {
		return "", "", fmt.Errorf("create %s-dlq: %w", queue, err)
	}
	dlqURL = aws.ToString(out.QueueUrl)
	out, err = c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(queue),
		Attributes: map[string]string{"VisibilityTimeout": strconv.Itoa(int(visibility.Round(time.Second) / time.Second))}})
	if err != nil {
		return "", "", fmt.Errorf("create %s: %w", queue, err)
	}
	return aws.ToString(out.QueueUrl), dlqURL, nil
}

func eventID(m types.Message) string {
	if v, ok := m.MessageAttributes[idAttribute]; ok {
		return aws.ToString(v.StringValue)
	}
	return ""
}

func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := parse(args)
	if err != nil {
		return err
	}
	client := newClient(cfg.endpoint)
	url, dlqURL, err := createQueues(ctx, client, cfg.queue, cfg.queueVisibility)
	if err != nil {
		return err
	}
	if cfg.send > 0 {
		return send(ctx, client, url, cfg.send, out)
	}

	rdb := redis.NewClient(&redis.Options{Addr: cfg.redisAddr})
	defer rdb.Close()

	var mu sync.Mutex // serializes output lines
	printf := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format, a...)
	}
	apply := func(ctx context.Context, m types.Message) error {
		id := eventID(m)
		if cfg.chaosCrashOn != "" && id == cfg.chaosCrashOn {
			// A hard crash inside the handler: no release, no delete, no
			// heartbeat; SQS redelivers the message when its visibility
			// timeout ends.
			os.Exit(3)
		}
		if cfg.chaosSlowOn != "" && id == cfg.chaosSlowOn {
			time.Sleep(cfg.chaosSlow)
		}
		var c Credit
		if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &c); err != nil || c.Account == "" {
			return fmt.Errorf("bad credit event %q: %v", aws.ToString(m.Body), err)
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
	outcome := func(m types.Message, status, action string, heartbeats int, err error) {
		line := fmt.Sprintf("outcome event=%s msgid=%s status=%s action=%s heartbeats=%d",
			eventID(m), aws.ToString(m.MessageId), status, action, heartbeats)
		if err != nil {
			line += fmt.Sprintf(" err=%q", err.Error())
		}
		printf("%s\n", line)
	}

	printf("consuming queue=%s unguarded=%t\n", url, cfg.unguarded)
	if cfg.unguarded {
		err = runUnguarded(ctx, client, url, cfg.workers, apply, outcome)
	} else {
		st, serr := redisstore.New(ctx, rdb, redisstore.WithKeyPrefix(cfg.prefix))
		if serr != nil {
			return serr
		}
		defer st.Close()
		q := idemqueue.New(idem.NewGuard(st), idemcall.WithName("credits"), idemcall.WithLease(cfg.lease))
		c := idemsqs.New(client, url, q,
			idemsqs.WithAttributeID(idAttribute),
			idemsqs.WithVisibility(cfg.visibility),
			idemsqs.WithDeadLetterQueue(dlqURL),
			idemsqs.WithReceive(1, 10),
			idemsqs.WithErrorHandler(func(err error) { fmt.Fprintln(os.Stderr, "sqsconsumer:", err) }),
			idemsqs.WithOutcome(func(m types.Message, o idemsqs.Outcome, err error) {
				outcome(m, o.Status.String(), o.Action.String(), o.Heartbeats, err)
			}))
		err = c.Run(ctx, cfg.workers, apply)
	}
	if ctx.Err() != nil {
		return nil // Ctrl-C or SIGTERM: running handlers finished
	}
	return err
}

// runUnguarded is what a consumer without idemsqs does: receive, apply,
// delete. Every redelivery (a handler slower than the visibility timeout,
// a crash) and every duplicate send runs the side effect again.
func runUnguarded(ctx context.Context, c *sqs.Client, url string, workers int,
	apply func(context.Context, types.Message) error, outcome func(types.Message, string, string, int, error)) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	free := make(chan struct{}, workers)
	for range workers {
		free <- struct{}{}
	}
	hctx := context.WithoutCancel(ctx)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-free:
		}
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 1,
			WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
		if err != nil || len(out.Messages) == 0 {
			free <- struct{}{}
			if err != nil && ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "sqsconsumer: receive:", err)
				time.Sleep(time.Second)
			}
			continue
		}
		m := out.Messages[0]
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { free <- struct{}{} }()
			action := "leave"
			err := apply(hctx, m)
			if err == nil {
				action = "delete"
				_, err = c.DeleteMessage(hctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
			}
			outcome(m, "unguarded", action, 0, err)
		}()
	}
}

// send sends n credit events, each twice (a retrying producer: SQS gives
// each send its own MessageId), with their event ID in the event-id
// attribute.
func send(ctx context.Context, c *sqs.Client, url string, n int, out io.Writer) error {
	for range 2 {
		for i := range n {
			body, _ := json.Marshal(Credit{Account: fmt.Sprintf("acct-%d", i%5), Amount: int64(i + 1)})
			_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(string(body)),
				MessageAttributes: map[string]types.MessageAttributeValue{
					idAttribute: {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprintf("evt-%d", i))},
				}})
			if err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(out, "sent %d events twice to %s\n", n, url)
	return nil
}
