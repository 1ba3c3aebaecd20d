package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemqueue"
)

// EventIDHeader carries the producer's event ID. It is the idempotency
// key: a producer that retries a publish sends the same ID again.
const EventIDHeader = "Event-Id"

// Credit is the event: credit an account's balance.
type Credit struct {
	Account string `json:"account"`
	Amount  int64  `json:"amount"`
}

type worker struct {
	cfg      config
	rdb      *redis.Client
	consumer *idemqueue.Consumer
	mu       sync.Mutex // serializes outcome lines
	out      io.Writer
}

// consume reads messages and hands them to cfg.workers goroutines until
// ctx is done, then lets the in-flight ones finish.
func (w *worker) consume(ctx context.Context, js jetstream.JetStream, stream jetstream.Stream) error {
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       w.cfg.durable,
		FilterSubject: w.cfg.subject,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       w.cfg.ackWait,
		MaxAckPending: 256,
	})
	if err != nil {
		return fmt.Errorf("consumer %s: %w", w.cfg.durable, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(2 * w.cfg.workers))
	if err != nil {
		return err
	}
	w.printf("consuming stream=%s durable=%s workers=%d\n", w.cfg.stream, w.cfg.durable, w.cfg.workers)
	go func() {
		<-ctx.Done()
		it.Stop()
	}()
	msgs := make(chan jetstream.Msg)
	var wg sync.WaitGroup
	for range w.cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range msgs {
				// Handlers run to completion even during shutdown: a
				// half-applied event is what this example avoids.
				w.handle(context.WithoutCancel(ctx), m)
			}
		}()
	}
	for {
		m, err := it.Next()
		if err != nil {
			close(msgs)
			wg.Wait()
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			return err
		}
		msgs <- m
	}
}

// handle applies one delivery and acks it according to idemqueue's rules.
func (w *worker) handle(ctx context.Context, m jetstream.Msg) {
	id := m.Headers().Get(EventIDHeader)
	delivered := uint64(1)
	if md, err := m.Metadata(); err == nil {
		delivered = md.NumDelivered
	}
	status, err := w.consumer.ProcessPayload(ctx, id, m.Data(), func(ctx context.Context) error {
		return w.apply(ctx, id, delivered, m.Data())
	})
	ack := "ack"
	switch {
	case status.Ack():
		if w.cfg.chaosNoAck > 0 && delivered == 1 && hashOf("noack:"+id)%uint32(w.cfg.chaosNoAck) == 0 {
			ack = "none" // as if the consumer died between processing and ack
		} else if aerr := m.Ack(); aerr != nil {
			ack = "ack-failed"
		}
	case idemqueue.IsPermanent(err):
		ack = "term" // a bad event: dead-letter it instead of redelivering forever
		m.Term()     //nolint:errcheck
	default:
		ack = "nak"
		m.NakWithDelay(100 * time.Millisecond) //nolint:errcheck
	}
	line := fmt.Sprintf("outcome event=%s status=%s delivered=%d ack=%s", id, status, delivered, ack)
	if err != nil {
		line += " err=" + strconv.Quote(err.Error())
	}
	w.printf("%s\n", line)
}

// apply is the side effect: credit the balance and count the application,
// in one MULTI so the two never disagree. The fence is recorded with it.
func (w *worker) apply(ctx context.Context, id string, delivered uint64, data []byte) error {
	if id == w.cfg.chaosCrashOn && delivered == 1 {
		// A hard crash inside the handler: no release, no ack, no
		// heartbeat from now on. The event's lease must expire before
		// another consumer can take it over.
		os.Exit(3)
	}
	if w.cfg.chaosHandlerDelay > 0 {
		time.Sleep(w.cfg.chaosHandlerDelay)
	}
	if w.cfg.chaosNakEvery > 0 && delivered == 1 && hashOf("nak:"+id)%uint32(w.cfg.chaosNakEvery) == 0 {
		return errors.New("chaos: simulated failure on first delivery")
	}
	var c Credit
	if err := json.Unmarshal(data, &c); err != nil || c.Account == "" {
		return fmt.Errorf("bad credit event %q: %v", data, err)
	}
	fence, _ := idem.FenceFrom(ctx)
	_, err := w.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HIncrBy(ctx, w.cfg.prefix+"balances", c.Account, c.Amount)
		p.HIncrBy(ctx, w.cfg.prefix+"applied", id, 1)
		p.HSet(ctx, w.cfg.prefix+"fences", id, fence)
		return nil
	})
	return err
}

func (w *worker) printf(format string, a ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fmt.Fprintf(w.out, format, a...)
}

func hashOf(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// publishDemo publishes n credit events, each twice: a producer that
// timed out waiting for the publish ack and published again.
func publishDemo(ctx context.Context, js jetstream.JetStream, cfg config, out io.Writer) error {
	for i := range cfg.publish {
		body, _ := json.Marshal(Credit{Account: fmt.Sprintf("acct-%d", i%5), Amount: int64(i + 1)})
		for range 2 {
			m := nats.NewMsg(cfg.subject)
			m.Header.Set(EventIDHeader, fmt.Sprintf("evt-%d", i))
			m.Data = body
			if _, err := js.PublishMsg(ctx, m); err != nil {
				return fmt.Errorf("publish: %w", err)
			}
		}
	}
	fmt.Fprintf(out, "published %d events (%d messages) to %s\n", cfg.publish, 2*cfg.publish, cfg.subject)
	return nil
}
