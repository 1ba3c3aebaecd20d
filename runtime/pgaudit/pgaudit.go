// Package pgaudit is an idemaudit.Sink that writes the audit trail to a
// Postgres table, off the caller's path.
//
//	if err := pgaudit.Migrate(ctx, pool); err != nil { … }   // once, at deploy
//	w := pgaudit.New(pool, pgaudit.WithRetention(90*24*time.Hour, time.Hour))
//	defer w.Close(ctx)                                        // flushes
//	g := idem.NewGuard(store, idem.WithObserver(idemaudit.New(w)))
//
// Record only enqueues: a background goroutine takes what is queued and
// writes it with one COPY per batch. The queue is bounded (WithQueueSize);
// when it is full — Postgres down or slower than the traffic — entries are
// dropped, never waited for, and counted (Dropped), so auditing can never
// stall or fail a guarded call. Entries a failed COPY could not write are
// counted by Lost and reported to the error handler.
//
// The table (schema "public", table "idem_audit" by default) has one row
// per entry; see MigrationSQL. Rows hold hashes, never arguments: the
// runtime does not see them. The payload column is filled only for calls
// whose ctx opted in with idemaudit.WithPayload.
//
// It lives apart from pgstore because the trail is a sink for any store
// (a Redis-guarded service can audit into Postgres) and pgstore's schema
// versioning should not change when the audit table does.
package pgaudit

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idemaudit"
)

type config struct {
	schema, table  string
	queue, batch   int
	retention      time.Duration
	retentionEvery time.Duration
	cleanupBatch   int
	onError        func(error)
	writeTimeout   time.Duration
}

// Option configures Migrate, MigrationSQL and New (use the same schema
// and table options for all three).
type Option func(*config)

// WithSchema sets the schema (default "public").
func WithSchema(name string) Option { return func(c *config) { c.schema = name } }

// WithTable sets the table name (default "idem_audit").
func WithTable(name string) Option { return func(c *config) { c.table = name } }

// WithQueueSize bounds the entries waiting to be written (default 8192);
// beyond it Record drops and counts.
func WithQueueSize(n int) Option { return func(c *config) { c.queue = n } }

// WithBatchSize caps the rows of one COPY (default 1000).
func WithBatchSize(n int) Option { return func(c *config) { c.batch = n } }

// WithRetention deletes rows older than age every interval, in batches of
// WithCleanupBatch rows (default: keep everything).
func WithRetention(age, every time.Duration) Option {
	return func(c *config) { c.retention, c.retentionEvery = age, every }
}

// WithCleanupBatch sets how many rows one retention DELETE removes
// (default 5000), so cleanup never holds long locks.
func WithCleanupBatch(n int) Option { return func(c *config) { c.cleanupBatch = n } }

// WithErrorHandler receives write and cleanup errors (default: ignored;
// they are counted by Lost).
func WithErrorHandler(f func(error)) Option { return func(c *config) { c.onError = f } }

func newConfig(opts []Option) config {
	c := config{schema: "public", table: "idem_audit", queue: 8192, batch: 1000, cleanupBatch: 5000, writeTimeout: 10 * time.Second}
	for _, o := range opts {
		o(&c)
	}
	if c.queue < 1 {
		c.queue = 1
	}
	if c.batch < 1 {
		c.batch = 1
	}
	if c.cleanupBatch < 1 {
		c.cleanupBatch = 1
	}
	return c
}

func (c config) qSchema() string { return pgx.Identifier{c.schema}.Sanitize() }
func (c config) qTable() string  { return pgx.Identifier{c.schema, c.table}.Sanitize() }

// MigrationSQL is the DDL Migrate runs, for deployments that apply
// migrations with their own tool.
func MigrationSQL(opts ...Option) string {
	c := newConfig(opts)
	idx := func(suffix string) string { return pgx.Identifier{c.table + suffix}.Sanitize() }
	return strings.Join([]string{
		"CREATE SCHEMA IF NOT EXISTS " + c.qSchema(),
		`CREATE TABLE IF NOT EXISTS ` + c.qTable() + ` (
	id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	created_at timestamptz NOT NULL,
	func       text        NOT NULL,
	entity     text        NOT NULL DEFAULT '',
	key_hash   text        NOT NULL,
	action     text        NOT NULL,
	reason     text        NOT NULL DEFAULT '',
	fence      bigint      NOT NULL DEFAULT 0,
	payload    bytea
)`,
		// Retention deletes by age; investigations look an entity or a key up.
		"CREATE INDEX IF NOT EXISTS " + idx("_created_at") + " ON " + c.qTable() + " (created_at)",
		"CREATE INDEX IF NOT EXISTS " + idx("_entity") + " ON " + c.qTable() + " (entity, id) WHERE entity <> ''",
		"CREATE INDEX IF NOT EXISTS " + idx("_key_hash") + " ON " + c.qTable() + " (key_hash, id)",
	}, ";\n") + ";\n"
}

// Migrate creates the schema, table and indexes if missing. It is
// idempotent and safe to run from several processes at once.
func Migrate(ctx context.Context, pool *pgxpool.Pool, opts ...Option) error {
	c := newConfig(opts)
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgaudit: migrate %s: %w", c.qTable(), err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit it is a no-op
	// Concurrent CREATE … IF NOT EXISTS can still collide in the catalog.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7276, hashtext($1))`, c.qTable()); err != nil {
		return fmt.Errorf("pgaudit: migrate %s: lock: %w", c.qTable(), err)
	}
	for _, stmt := range strings.Split(strings.TrimSpace(MigrationSQL(opts...)), ";\n") {
		if stmt = strings.TrimSuffix(stmt, ";"); stmt == "" {
			continue
		}
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("pgaudit: migrate %s: %w", c.qTable(), err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgaudit: migrate %s: commit: %w", c.qTable(), err)
	}
	return nil
}

// ErrClosed is returned by Flush after Close.
var ErrClosed = errors.New("pgaudit: writer closed")

// Writer is the asynchronous audit sink. Create it with New.
type Writer struct {
	pool    *pgxpool.Pool
	cfg     config
	q       chan idemaudit.Entry
	flushes chan chan struct{}
	stop    chan struct{}
	done    chan struct{}
	closing sync.Once
	closed  atomic.Bool
	// inflight counts Records between their closed check and their send,
	// so Close can wait for them: no entry is enqueued after the final
	// drain and silently lost.
	inflight atomic.Int64

	dropped, written, lost atomic.Uint64
}

var _ idemaudit.Sink = (*Writer)(nil)

// New starts a writer on pool. The table must exist (Migrate).
func New(pool *pgxpool.Pool, opts ...Option) *Writer {
	w := &Writer{
		pool:    pool,
		cfg:     newConfig(opts),
		flushes: make(chan chan struct{}),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	w.q = make(chan idemaudit.Entry, w.cfg.queue)
	go w.loop()
	return w
}

// Record enqueues e. It never blocks: with the queue full (or the writer
// closed) e is dropped and counted.
func (w *Writer) Record(_ context.Context, e idemaudit.Entry) {
	w.inflight.Add(1)
	defer w.inflight.Add(-1)
	if w.closed.Load() {
		w.dropped.Add(1)
		return
	}
	select {
	case w.q <- e:
	default:
		w.dropped.Add(1)
	}
}

// Dropped is how many entries Record dropped because the queue was full
// or the writer closed. Export it as a metric: non-zero means the trail
// has holes.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Lost is how many queued entries a failed write could not store.
func (w *Writer) Lost() uint64 { return w.lost.Load() }

// Written is how many entries are in the table.
func (w *Writer) Written() uint64 { return w.written.Load() }

// Flush returns once every entry queued before the call is written (or
// lost), or with ctx's error.
func (w *Writer) Flush(ctx context.Context) error {
	reply := make(chan struct{})
	select {
	case w.flushes <- reply:
	case <-w.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-reply:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting entries, writes what is queued and stops the
// writer. It returns ctx's error if that takes longer than ctx allows
// (the rest is then written in the background until done).
func (w *Writer) Close(ctx context.Context) error {
	w.closing.Do(func() {
		w.closed.Store(true)
		// A Record that saw closed false is between its check and its
		// (non-blocking) send: wait for it, then drain.
		for w.inflight.Load() != 0 {
			runtime.Gosched()
		}
		close(w.stop)
	})
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *Writer) loop() {
	defer close(w.done)
	var tick <-chan time.Time
	if w.cfg.retention > 0 && w.cfg.retentionEvery > 0 {
		t := time.NewTicker(w.cfg.retentionEvery)
		defer t.Stop()
		tick = t.C
	}
	batch := make([]idemaudit.Entry, 0, w.cfg.batch)
	for {
		select {
		case e := <-w.q:
			batch = w.fill(append(batch[:0], e))
			w.write(batch)
		case reply := <-w.flushes:
			w.drain(batch)
			close(reply)
		case <-tick:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			if _, err := w.Cleanup(ctx, w.cfg.retention); err != nil {
				w.report(err)
			}
			cancel()
		case <-w.stop:
			w.drain(batch)
			return
		}
	}
}

// fill adds what is already queued, up to a batch, without waiting.
func (w *Writer) fill(batch []idemaudit.Entry) []idemaudit.Entry {
	for len(batch) < w.cfg.batch {
		select {
		case e := <-w.q:
			batch = append(batch, e)
		default:
			return batch
		}
	}
	return batch
}

// drain writes everything queued now.
func (w *Writer) drain(batch []idemaudit.Entry) {
	for {
		batch = w.fill(batch[:0])
		if len(batch) == 0 {
			return
		}
		w.write(batch)
	}
}

var columns = []string{"created_at", "func", "entity", "key_hash", "action", "reason", "fence", "payload"}

func (w *Writer) write(batch []idemaudit.Entry) {
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.writeTimeout)
	defer cancel()
	rows := make([][]any, len(batch))
	for i, e := range batch {
		rows[i] = []any{e.Time, e.Func, e.Entity, e.KeyHash, string(e.Action), e.Reason, int64(e.Fence), e.Payload}
	}
	n, err := w.pool.CopyFrom(ctx, pgx.Identifier{w.cfg.schema, w.cfg.table}, columns, pgx.CopyFromRows(rows))
	if err != nil {
		// COPY is all or nothing.
		w.lost.Add(uint64(len(batch)))
		w.report(fmt.Errorf("pgaudit: writing %d entries to %s: %w", len(batch), w.cfg.qTable(), err))
		return
	}
	w.written.Add(uint64(n))
}

func (w *Writer) report(err error) {
	if w.cfg.onError != nil {
		w.cfg.onError(err)
	}
}

// Cleanup deletes rows older than age, in batches (WithCleanupBatch), so
// no statement holds locks for long. It returns how many rows it deleted.
// Age is judged by the database's clock.
func (w *Writer) Cleanup(ctx context.Context, age time.Duration) (int64, error) {
	return Cleanup(ctx, w.pool, age, WithSchema(w.cfg.schema), WithTable(w.cfg.table), WithCleanupBatch(w.cfg.cleanupBatch))
}

// Cleanup is Writer.Cleanup without a writer (a cron job's).
func Cleanup(ctx context.Context, pool *pgxpool.Pool, age time.Duration, opts ...Option) (int64, error) {
	c := newConfig(opts)
	q := `DELETE FROM ` + c.qTable() + ` WHERE id IN (SELECT id FROM ` + c.qTable() +
		` WHERE created_at < now() - make_interval(secs => $1) ORDER BY created_at LIMIT $2)`
	var total int64
	for {
		tag, err := pool.Exec(ctx, q, age.Seconds(), c.cleanupBatch)
		if err != nil {
			return total, fmt.Errorf("pgaudit: cleanup %s: %w", c.qTable(), err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(c.cleanupBatch) {
			return total, nil
		}
	}
}
