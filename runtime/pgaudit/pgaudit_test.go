package pgaudit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idemaudit"
	"github.com/idemgen/idemgen/runtime/pgaudit"

	"github.com/idemgen/idemgen/internal/testenv"
)

// testDB connects to IDEM_POSTGRES_URL (skip outside CI, fail under
// CI=true) and returns a schema name only this test uses.
func testDB(t *testing.T) (*pgxpool.Pool, string) { return benchDB(t) }

func benchDB(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	url := testenv.PostgresURL()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, url)
	if err == nil {
		err = pool.Ping(ctx)
	}
	testenv.Need(t, "PostgreSQL at "+url, "start one (trust auth, database test): sudo service postgresql start, or set IDEM_POSTGRES_URL", err)
	schema := "pgaudit_test_" + testenv.RandName()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE") //nolint:errcheck
		pool.Close()
	})
	return pool, schema
}

// migratedDB is benchDB with the audit table migrated in its schema.
func migratedDB(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	pool, schema := benchDB(t)
	if err := pgaudit.Migrate(context.Background(), pool, pgaudit.WithSchema(schema)); err != nil {
		t.Fatal(err)
	}
	return pool, schema
}

func count(t *testing.T, pool *pgxpool.Pool, schema, table string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{schema, table}.Sanitize()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func entry(i int, at time.Time) idemaudit.Entry {
	return idemaudit.Entry{Time: at, Func: "f", KeyHash: fmt.Sprintf("%064d", i), Action: idemaudit.Executed, Fence: uint64(i)}
}

func TestMigrate(t *testing.T) {
	pool, schema := testDB(t)
	ctx := context.Background()
	opts := []pgaudit.Option{pgaudit.WithSchema(schema), pgaudit.WithTable("trail")}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = pgaudit.Migrate(ctx, pool, opts...) }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent Migrate: %v", err)
	}
	if err := pgaudit.Migrate(ctx, pool, opts...); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	rows, err := pool.Query(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'trail' ORDER BY indexname`, schema)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"trail_created_at", "trail_entity", "trail_key_hash", "trail_pkey"}, got); diff != "" {
		t.Errorf("indexes (-want +got):\n%s", diff)
	}
	if sql := pgaudit.MigrationSQL(opts...); !strings.Contains(sql, `"`+schema+`"."trail"`) {
		t.Errorf("MigrationSQL does not name the table:\n%s", sql)
	}
}

func TestWriteFlushClose(t *testing.T) {
	pool, schema := migratedDB(t)
	ctx := context.Background()
	w := pgaudit.New(pool, pgaudit.WithSchema(schema), pgaudit.WithBatchSize(7), pgaudit.WithErrorHandler(func(err error) { t.Error(err) }))
	now := time.Now()
	for i := range 50 {
		w.Record(ctx, entry(i, now))
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, pool, schema, "idem_audit"); n != 50 || w.Written() != 50 {
		t.Errorf("after Flush: %d rows, Written %d; want 50", n, w.Written())
	}
	for i := range 20 {
		w.Record(ctx, entry(100+i, now))
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, pool, schema, "idem_audit"); n != 70 {
		t.Errorf("after Close: %d rows, want 70 (Close flushes)", n)
	}
	w.Record(ctx, entry(999, now))
	if w.Dropped() != 1 {
		t.Errorf("Record after Close: Dropped %d, want 1", w.Dropped())
	}
	if err := w.Flush(ctx); !errors.Is(err, pgaudit.ErrClosed) {
		t.Errorf("Flush after Close: %v", err)
	}
	// Stored faithfully.
	var got idemaudit.Entry
	var action string
	var fence int64
	err := pool.QueryRow(ctx, `SELECT created_at, func, entity, key_hash, action, reason, fence, payload FROM `+
		pgx.Identifier{schema, "idem_audit"}.Sanitize()+` WHERE fence = 3`).Scan(&got.Time, &got.Func, &got.Entity, &got.KeyHash, &action, &got.Reason, &fence, &got.Payload)
	if err != nil {
		t.Fatal(err)
	}
	got.Action, got.Fence = idemaudit.Action(action), uint64(fence)
	want := entry(3, now)
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Sub(b).Abs() < time.Microsecond })); diff != "" {
		t.Errorf("row (-want +got):\n%s", diff)
	}
}

// With the table locked, the writer's COPY waits: Record must still return
// at once, dropping what does not fit the queue and counting it.
func TestFullQueueDropsAndCounts(t *testing.T) {
	pool, schema := migratedDB(t)
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+pgx.Identifier{schema, "idem_audit"}.Sanitize()+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	const queue, total = 4, 200
	w := pgaudit.New(pool, pgaudit.WithSchema(schema), pgaudit.WithQueueSize(queue), pgaudit.WithBatchSize(1))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range total {
			w.Record(ctx, entry(i, time.Now()))
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a deadlock detector, not a timing assertion
		t.Fatal("Record blocked while the table was locked")
	}
	dropped := w.Dropped()
	if dropped < total-queue-1 {
		t.Errorf("Dropped %d; want at least %d (queue %d, one batch in flight)", dropped, total-queue-1, queue)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	n := count(t, pool, schema, "idem_audit")
	if uint64(n) != w.Written() || w.Written()+w.Dropped()+w.Lost() != total {
		t.Errorf("rows %d, written %d, dropped %d, lost %d; want written = rows and the sum %d", n, w.Written(), w.Dropped(), w.Lost(), total)
	}
}

func TestRetention(t *testing.T) {
	pool, schema := migratedDB(t)
	ctx := context.Background()
	w := pgaudit.New(pool, pgaudit.WithSchema(schema), pgaudit.WithCleanupBatch(2))
	defer w.Close(ctx)
	old, recent := time.Now().Add(-48*time.Hour), time.Now()
	for i := range 7 {
		w.Record(ctx, entry(i, old))
	}
	for i := range 3 {
		w.Record(ctx, entry(10+i, recent))
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := w.Cleanup(ctx, 24*time.Hour)
	if err != nil || n != 7 {
		t.Fatalf("Cleanup: %d, %v; want 7 in batches of 2", n, err)
	}
	if c := count(t, pool, schema, "idem_audit"); c != 3 {
		t.Errorf("%d rows left, want 3", c)
	}

	// The background retention does the same.
	bg := pgaudit.New(pool, pgaudit.WithSchema(schema), pgaudit.WithRetention(24*time.Hour, 20*time.Millisecond))
	defer bg.Close(ctx)
	for i := range 5 {
		bg.Record(ctx, entry(20+i, old))
	}
	if err := bg.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for count(t, pool, schema, "idem_audit") != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("background retention left %d rows, want 3", count(t, pool, schema, "idem_audit"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Records racing Close are either written or counted as dropped: none
// vanishes into the queue after the final drain.
func TestCloseRacingRecords(t *testing.T) {
	pool, schema := migratedDB(t)
	ctx := context.Background()
	w := pgaudit.New(pool, pgaudit.WithSchema(schema), pgaudit.WithQueueSize(100000))
	const workers, each = 8, 500
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				w.Record(ctx, entry(g*each+i, time.Now()))
			}
		}()
	}
	time.Sleep(time.Millisecond) // let some Records land before Close
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	n := count(t, pool, schema, "idem_audit")
	if uint64(n) != w.Written() || w.Written()+w.Dropped()+w.Lost() != workers*each {
		t.Errorf("rows %d, written %d, dropped %d, lost %d; want written = rows and the sum %d", n, w.Written(), w.Dropped(), w.Lost(), workers*each)
	}
}
