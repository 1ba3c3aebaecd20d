// Package idemkafka is a Kafka consumer (a franz-go kgo consumer group)
// that runs its handler once per message ID through runtime/idemqueue, and
// commits a partition's offset only past records whose status was Ran or
// Duplicate (or that were dead-lettered).
//
//	q := idemqueue.New(idem.NewGuard(store), idemcall.WithName("billing.credits"))
//	c, err := idemkafka.New(q, func(ctx context.Context, r *kgo.Record) error {
//		return apply(ctx, r.Value) // the side effect
//	}, idemkafka.WithBrokers(brokers...), idemkafka.WithGroup("billing"), idemkafka.WithTopics("credits"),
//		idemkafka.WithDeadLetterTopic("credits.dlq"))
//	...
//	err = c.Run(ctx) // until ctx is canceled
//
// # Message IDs
//
// The idempotency key is a producer-set header, by default
// "idempotency-key" and then "message-id" (WithMessageID to change it): a producer
// that retries a send writes a second record with a new offset, and only
// the ID it set itself makes the two the same message. PositionID
// (topic/partition/offset) is available but deduplicates broker redeliveries
// only, never a producer's retries.
//
// # Commits
//
// Each assigned partition has one worker that processes its records in
// order. A record is done when Process returns Ran or Duplicate, or when a
// permanently failing record (idemqueue.IsPermanent) was handed to the
// dead-letter hook. A Failed record is retried in place, with exponential
// backoff, so that nothing after it in its partition is processed or
// committed until it is done; other partitions go on. Done offsets are
// committed every WithCommitInterval, when partitions are revoked, and when
// Run returns. A worker that holds more than WithMaxBuffered records pauses
// fetching its partition until it has caught up.
//
// # Rebalances
//
// When partitions are revoked (cooperative-sticky rebalancing, the kgo
// default), their workers stop taking records and are given WithRevokeWait
// to finish the record they are processing; then the done offsets are
// committed and the partitions are released. A handler still running
// afterwards is not canceled: it goes on under its idemqueue lease, which
// is heartbeated while it runs, and the partition's new owner re-reads from
// the committed offset, waits for that lease (idemcall.WithWait), and finds
// the message Duplicate. Its outcome is not committed by this consumer (the
// partition is no longer its own). On lost partitions (a fatal group error)
// the same happens without the commit.
package idemkafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/idemgen/idemgen/runtime/idemqueue"
)

// Handler applies one record. Its side effect runs at most once per
// message ID among all consumers sharing the idemqueue store (within the
// queue's TTL). ctx carries the claim's fence (idem.FenceFrom).
type Handler func(ctx context.Context, r *kgo.Record) error

// IDFunc returns a record's message ID; "" is an invalid ID (the record
// fails permanently and goes to the dead-letter hook).
type IDFunc func(r *kgo.Record) string

// DefaultIDHeaders are the headers the default IDFunc reads, in order.
var DefaultIDHeaders = []string{"idempotency-key", "message-id"}

// HeaderID returns an IDFunc that reads the first non-empty header among
// names (exact, case-sensitive names, as Kafka headers are).
func HeaderID(names ...string) IDFunc {
	names = append([]string(nil), names...)
	return func(r *kgo.Record) string {
		for _, n := range names {
			for _, h := range r.Headers {
				if h.Key == n && len(h.Value) > 0 {
					return string(h.Value)
				}
			}
		}
		return ""
	}
}

// PositionID is the record's position, "topic/partition/offset". It is
// stable across broker redeliveries of one record, but a producer that
// retries a send (a timeout after the broker had written it) writes a
// second record at another offset: PositionID makes the two different
// messages. Use it only for topics whose producers cannot duplicate
// (idempotent producers deduplicate only within one producer session).
func PositionID(r *kgo.Record) string {
	return r.Topic + "/" + strconv.FormatInt(int64(r.Partition), 10) + "/" + strconv.FormatInt(r.Offset, 10)
}

// DeadLetterFunc receives a record whose processing failed permanently
// (cause satisfies idemqueue.IsPermanent). When it returns nil the record
// is done and its offset committed; an error retries it (and blocks its
// partition) like a Failed record.
type DeadLetterFunc func(ctx context.Context, r *kgo.Record, cause error) error

// Outcome is what happened to one delivery of a record, for WithOutcome.
type Outcome struct {
	Record  *kgo.Record
	ID      string
	Status  idemqueue.Status
	Err     error
	Attempt int  // 1 for the first processing of this delivery, then retries
	Dead    bool // the record went to the dead-letter hook, which accepted it
}

// Option configures New.
type Option func(*config)

// config is what the options set.
type config struct {
	brokers    []string
	group      string
	topics     []string
	clientOpts []kgo.Opt

	id       IDFunc
	payload  bool
	dead     DeadLetterFunc
	dlqTopic string // WithDeadLetterTopic: dead is built over the client in New
	outcome  func(Outcome)
	log      *slog.Logger

	backoffMin, backoffMax time.Duration
	commitEvery            time.Duration
	revokeWait             time.Duration
	maxBuffered            int
}

// WithBrokers sets the seed brokers ("host:port"). New needs them.
func WithBrokers(addrs ...string) Option {
	return func(c *config) { c.brokers = append(c.brokers, addrs...) }
}

// WithGroup sets the consumer group. New needs it.
func WithGroup(group string) Option { return func(c *config) { c.group = group } }

// WithTopics sets the topics to consume. New needs at least one.
func WithTopics(topics ...string) Option {
	return func(c *config) { c.topics = append(c.topics, topics...) }
}

// WithClientOptions adds to the kgo client's options (TLS, SASL,
// SessionTimeout, Balancers...). The consumer sets the seed brokers,
// group, topics, DisableAutoCommit and the partition callbacks; do not
// set those here.
func WithClientOptions(opts ...kgo.Opt) Option {
	return func(c *config) { c.clientOpts = append(c.clientOpts, opts...) }
}

// WithMessageID sets how the message ID is read (default
// HeaderID(DefaultIDHeaders...)).
func WithMessageID(f IDFunc) Option { return func(c *config) { c.id = f } }

// WithPayload sets whether the record value is fingerprinted with the ID
// (idemqueue.ProcessPayload; on by default): a second record with the
// same ID and another value fails permanently (idem.ErrPayloadMismatch)
// instead of being a Duplicate.
func WithPayload(on bool) Option { return func(c *config) { c.payload = on } }

// WithDeadLetter sets the hook for permanently failing records. Without
// one, such a record is logged at error level and committed (skipped): a
// record without an ID would otherwise block its partition for ever.
func WithDeadLetter(f DeadLetterFunc) Option {
	return func(c *config) { c.dead, c.dlqTopic = f, "" }
}

// WithDeadLetterTopic dead-letters to topic, through the consumer's own
// client: the record's key, value and headers, plus headers
// "idemkafka-error", "idemkafka-topic", "idemkafka-partition" and
// "idemkafka-offset".
func WithDeadLetterTopic(topic string) Option {
	return func(c *config) { c.dead, c.dlqTopic = nil, topic }
}

// deadLetterTo is WithDeadLetterTopic's hook.
func (c *Consumer) deadLetterTo(topic string) DeadLetterFunc {
	return func(ctx context.Context, r *kgo.Record, cause error) error {
		hs := append(append([]kgo.RecordHeader(nil), r.Headers...),
			kgo.RecordHeader{Key: "idemkafka-error", Value: []byte(cause.Error())},
			kgo.RecordHeader{Key: "idemkafka-topic", Value: []byte(r.Topic)},
			kgo.RecordHeader{Key: "idemkafka-partition", Value: []byte(strconv.FormatInt(int64(r.Partition), 10))},
			kgo.RecordHeader{Key: "idemkafka-offset", Value: []byte(strconv.FormatInt(r.Offset, 10))})
		dl := &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Headers: hs}
		if err := c.cl.ProduceSync(ctx, dl).FirstErr(); err != nil {
			return fmt.Errorf("idemkafka: dead-letter to %s: %w", topic, err)
		}
		return nil
	}
}

// WithRetryBackoff sets the first and the longest pause between retries of
// a Failed record (default 100ms, 5s; doubled after each failure).
func WithRetryBackoff(first, max time.Duration) Option {
	return func(c *config) { c.backoffMin, c.backoffMax = first, max }
}

// WithCommitInterval sets how often done offsets are committed (default 1s).
func WithCommitInterval(d time.Duration) Option { return func(c *config) { c.commitEvery = d } }

// WithRevokeWait bounds how long revoking partitions (and Run's return)
// waits for their in-flight records (default 5s). Keep it well below the
// group's rebalance timeout (kgo default 60s): the rebalance waits for it.
func WithRevokeWait(d time.Duration) Option { return func(c *config) { c.revokeWait = d } }

// WithMaxBuffered sets how many fetched records a partition's worker holds
// before its partition's fetching is paused (default 500).
func WithMaxBuffered(n int) Option { return func(c *config) { c.maxBuffered = n } }

// WithOutcome calls f after every processing attempt (from the partition's
// worker goroutine; keep it quick).
func WithOutcome(f func(Outcome)) Option { return func(c *config) { c.outcome = f } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// Consumer is a group consumer of the WithTopics topics. Make it with New
// and call Run once.
type Consumer struct {
	config
	q  *idemqueue.Consumer
	h  Handler
	cl *kgo.Client

	// hctx is the handlers' context: Run's context without its
	// cancellation, canceled by hardStop once Run's shutdown has waited
	// revokeWait.
	hctx     context.Context
	hardStop context.CancelFunc

	mu      sync.Mutex
	workers map[tp]*worker // the partitions this member owns now
	all     sync.WaitGroup // every worker goroutine, owned or orphaned
	running atomic.Bool
}

type tp struct {
	topic string
	part  int32
}

// New makes a Consumer and its kgo client; nothing is consumed before Run.
func New(q *idemqueue.Consumer, h Handler, opts ...Option) (*Consumer, error) {
	cfg := config{
		id:          HeaderID(DefaultIDHeaders...),
		payload:     true,
		log:         slog.Default(),
		backoffMin:  100 * time.Millisecond,
		backoffMax:  5 * time.Second,
		commitEvery: time.Second,
		revokeWait:  5 * time.Second,
		maxBuffered: 500,
	}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case q == nil || h == nil:
		return nil, errors.New("idemkafka: nil idemqueue.Consumer or handler")
	case len(cfg.brokers) == 0 || cfg.group == "" || len(cfg.topics) == 0:
		return nil, errors.New("idemkafka: New needs WithBrokers, WithGroup and WithTopics")
	}
	if cfg.backoffMin <= 0 {
		cfg.backoffMin = time.Millisecond
	}
	cfg.backoffMax = max(cfg.backoffMax, cfg.backoffMin)
	if cfg.commitEvery <= 0 {
		cfg.commitEvery = time.Second
	}
	cfg.maxBuffered = max(cfg.maxBuffered, 1)
	c := &Consumer{config: cfg, q: q, h: h, workers: map[tp]*worker{}}
	if cfg.dlqTopic != "" {
		c.dead = c.deadLetterTo(cfg.dlqTopic)
	}
	kopts := append(append([]kgo.Opt(nil), cfg.clientOpts...),
		kgo.SeedBrokers(cfg.brokers...),
		kgo.ConsumerGroup(cfg.group),
		kgo.ConsumeTopics(cfg.topics...),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(c.assigned),
		kgo.OnPartitionsRevoked(c.revoked),
		kgo.OnPartitionsLost(c.lost),
	)
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("idemkafka: %w", err)
	}
	c.cl = cl
	return c, nil
}

// Client is the consumer's kgo client (to produce with it, or for admin
// requests). Do not poll or commit with it.
func (c *Consumer) Client() *kgo.Client { return c.cl }

// Close closes the client without running. After Run, it is not needed.
func (c *Consumer) Close() {
	if !c.running.Load() {
		c.cl.Close()
	}
}

// Run consumes until ctx is done, then stops taking records, waits up to
// WithRevokeWait for the in-flight ones (and then cancels their context),
// commits what is done, leaves the group and closes the client. It returns
// nil after a cancellation, or the error that stopped consuming.
func (c *Consumer) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("idemkafka: Run called twice")
	}
	c.hctx, c.hardStop = context.WithCancel(context.WithoutCancel(ctx))
	defer c.hardStop()

	commitDone := make(chan struct{})
	commitCtx, stopCommits := context.WithCancel(ctx)
	go func() {
		defer close(commitDone)
		t := time.NewTicker(c.commitEvery)
		defer t.Stop()
		for {
			select {
			case <-commitCtx.Done():
				return
			case <-t.C:
				c.commitOwned(commitCtx)
			}
		}
	}()

	var runErr error
	for ctx.Err() == nil {
		fs := c.cl.PollRecords(ctx, c.maxBuffered)
		if fs.IsClientClosed() {
			runErr = errors.New("idemkafka: client closed")
			break
		}
		fs.EachError(func(topic string, part int32, err error) {
			if !errors.Is(err, context.Canceled) {
				c.log.Warn("idemkafka: fetch error", "topic", topic, "partition", part, "err", err)
			}
		})
		fs.EachPartition(c.dispatch)
	}
	stopCommits()
	<-commitDone

	// Shutdown: stop every owned worker, give in-flight records the
	// revoke wait, commit what is done, then cancel the stragglers.
	c.mu.Lock()
	owned := c.workers
	c.workers = map[tp]*worker{}
	c.mu.Unlock()
	c.stopWorkers(owned)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	c.commit(cctx, owned)
	cancel()
	c.hardStop()
	c.all.Wait()
	c.cl.Close() // leaves the group
	return runErr
}

// worker processes one partition's records in order.
type worker struct {
	tp
	c      *Consumer
	mu     sync.Mutex
	queue  []*kgo.Record
	paused bool
	next   kgo.EpochOffset // the offset to commit: one past the last done record
	done   bool            // next is set
	commit int64           // last committed offset, -1 if none
	wake   chan struct{}
	stop   chan struct{} // closed: take no more records
	exited chan struct{}
}

func (c *Consumer) assigned(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for topic, parts := range m {
		for _, p := range parts {
			k := tp{topic, p}
			if c.workers[k] != nil {
				continue
			}
			w := &worker{tp: k, c: c, commit: -1, wake: make(chan struct{}, 1), stop: make(chan struct{}), exited: make(chan struct{})}
			c.workers[k] = w
			c.all.Add(1)
			go w.run()
		}
	}
}

// take removes the workers of m from the owned set.
func (c *Consumer) take(m map[string][]int32) map[tp]*worker {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[tp]*worker{}
	for topic, parts := range m {
		for _, p := range parts {
			k := tp{topic, p}
			if w := c.workers[k]; w != nil {
				out[k] = w
				delete(c.workers, k)
			}
		}
	}
	return out
}

func (c *Consumer) revoked(ctx context.Context, _ *kgo.Client, m map[string][]int32) {
	ws := c.take(m)
	c.stopWorkers(ws)
	c.commit(ctx, ws)
}

func (c *Consumer) lost(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	ws := c.take(m)
	c.stopWorkers(ws)
}

// stopWorkers tells the workers to take no more records, resumes their
// partitions if paused (a later assignment starts unpaused), and waits up
// to revokeWait for their in-flight records.
func (c *Consumer) stopWorkers(ws map[tp]*worker) {
	if len(ws) == 0 {
		return
	}
	resume := map[string][]int32{}
	for _, w := range ws {
		close(w.stop)
		w.mu.Lock()
		if w.paused {
			w.paused = false
			resume[w.topic] = append(resume[w.topic], w.part)
		}
		w.queue = nil
		w.mu.Unlock()
	}
	if len(resume) > 0 {
		c.cl.ResumeFetchPartitions(resume)
	}
	t := time.NewTimer(c.revokeWait)
	defer t.Stop()
	for _, w := range ws {
		select {
		case <-w.exited:
		case <-t.C:
			c.log.Warn("idemkafka: records still in flight after the revoke wait; their partitions' new owners will wait for their leases",
				"wait", c.revokeWait)
			return
		}
	}
}

// commitOwned commits the done offsets of the partitions owned now.
func (c *Consumer) commitOwned(ctx context.Context) {
	c.mu.Lock()
	ws := make(map[tp]*worker, len(c.workers))
	for k, w := range c.workers {
		ws[k] = w
	}
	c.mu.Unlock()
	c.commit(ctx, ws)
}

// commit synchronously commits the workers' done offsets that moved.
func (c *Consumer) commit(ctx context.Context, ws map[tp]*worker) {
	offs := map[string]map[int32]kgo.EpochOffset{}
	for k, w := range ws {
		w.mu.Lock()
		if w.done && w.next.Offset > w.commit {
			if offs[k.topic] == nil {
				offs[k.topic] = map[int32]kgo.EpochOffset{}
			}
			offs[k.topic][k.part] = w.next
		}
		w.mu.Unlock()
	}
	if len(offs) == 0 {
		return
	}
	c.cl.CommitOffsetsSync(ctx, offs, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			c.log.Warn("idemkafka: offset commit failed; the records will be redelivered and found Duplicate", "err", err)
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					c.log.Warn("idemkafka: offset commit rejected", "topic", t.Topic, "partition", p.Partition, "code", p.ErrorCode)
					continue
				}
				if w := ws[tp{t.Topic, p.Partition}]; w != nil {
					w.mu.Lock()
					if o := offs[t.Topic][p.Partition].Offset; o > w.commit {
						w.commit = o
					}
					w.mu.Unlock()
				}
			}
		}
	})
}

// dispatch hands a fetched partition's records to its worker, pausing the
// partition when the worker holds too many.
func (c *Consumer) dispatch(p kgo.FetchTopicPartition) {
	if len(p.Records) == 0 {
		return
	}
	c.mu.Lock()
	w := c.workers[tp{p.Topic, p.Partition}]
	c.mu.Unlock()
	if w == nil {
		return // no longer ours: the new owner reads them from the committed offset
	}
	w.mu.Lock()
	select {
	case <-w.stop:
		w.mu.Unlock()
		return
	default:
	}
	w.queue = append(w.queue, p.Records...)
	if !w.paused && len(w.queue) >= c.maxBuffered {
		w.paused = true
		c.cl.PauseFetchPartitions(map[string][]int32{w.topic: {w.part}})
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// pop returns the next record, or nil once the worker is stopped.
func (w *worker) pop() *kgo.Record {
	for {
		select {
		case <-w.stop:
			return nil
		default:
		}
		w.mu.Lock()
		if len(w.queue) > 0 {
			r := w.queue[0]
			w.queue[0] = nil
			w.queue = w.queue[1:]
			if w.paused && len(w.queue) <= w.c.maxBuffered/2 {
				w.paused = false
				w.c.cl.ResumeFetchPartitions(map[string][]int32{w.topic: {w.part}})
			}
			w.mu.Unlock()
			return r
		}
		w.mu.Unlock()
		select {
		case <-w.stop:
			return nil
		case <-w.wake:
		}
	}
}

func (w *worker) run() {
	defer w.c.all.Done()
	defer close(w.exited)
	for {
		r := w.pop()
		if r == nil {
			return
		}
		if !w.c.handle(w, r) {
			return
		}
		w.mu.Lock()
		w.next = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
		w.done = true
		w.mu.Unlock()
	}
}

// handle processes r until it is done (true) or the worker is stopped
// while it is being retried (false: not done, not committed).
func (c *Consumer) handle(w *worker, r *kgo.Record) bool {
	id := c.id(r)
	backoff := c.backoffMin
	for attempt := 1; ; attempt++ {
		fn := func(ctx context.Context) error { return c.h(ctx, r) }
		var st idemqueue.Status
		var err error
		if c.payload {
			st, err = c.q.ProcessPayload(c.hctx, id, r.Value, fn)
		} else {
			st, err = c.q.Process(c.hctx, id, fn)
		}
		o := Outcome{Record: r, ID: id, Status: st, Err: err, Attempt: attempt}
		switch {
		case st.Ack():
			c.report(o)
			return true
		case idemqueue.IsPermanent(err):
			if c.dead == nil {
				c.log.Error("idemkafka: record fails permanently and no dead-letter hook is set: skipped",
					"topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "id", id, "err", err)
				o.Dead = true
				c.report(o)
				return true
			}
			if derr := c.dead(c.hctx, r, err); derr == nil {
				o.Dead = true
				c.report(o)
				return true
			} else {
				o.Err = errors.Join(err, derr)
			}
		}
		c.report(o)
		if c.hctx.Err() != nil {
			return false
		}
		t := time.NewTimer(backoff)
		select {
		case <-w.stop:
			t.Stop()
			return false
		case <-c.hctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		backoff = min(2*backoff, c.backoffMax)
	}
}

func (c *Consumer) report(o Outcome) {
	if c.outcome != nil {
		c.outcome(o)
	}
}
