package pgstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

const startHint = `PostgreSQL is not reachable at %s (%v).
Start one (trust auth, database "test"), for example:
    sudo service postgresql start   # or: docker run -d -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust -e POSTGRES_DB=test postgres:16
or point IDEM_POSTGRES_URL at a server you may create schemas on.`

// needPG skips (outside CI) or fails (CI=true) when Postgres is missing.
func needPG(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		testenv.Need(t, "PostgreSQL", fmt.Sprintf(startHint, testenv.PostgresURL(), err), err)
	}
}

// newPool returns a pool for one test; tweak edits its config.
func newPool(t testing.TB, tweak func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testenv.PostgresURL())
	if err != nil {
		t.Fatalf("IDEM_POSTGRES_URL: %v", err)
	}
	cfg.MaxConns = 4
	if tweak != nil {
		tweak(cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = pool.Ping(ctx)
	}
	needPG(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// poolWith is newPool with room for maxConns connections.
func poolWith(t testing.TB, maxConns int32) *pgxpool.Pool {
	t.Helper()
	return newPool(t, func(c *pgxpool.Config) { c.MaxConns = maxConns })
}

// newSchema makes a schema only this test uses and drops it afterwards.
func newSchema(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	name := "pgstore_test_" + testenv.RandName()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE") //nolint:errcheck
	})
	return name
}

// newStore migrates a fresh schema and opens a store on it.
func newStore(t testing.TB, pool *pgxpool.Pool, opts ...Option) *Store {
	t.Helper()
	if pool == nil {
		pool = newPool(t, nil)
	}
	return migratedStore(t, pool, append([]Option{WithSchema(newSchema(t, pool))}, opts...)...)
}

// migratedStore runs Migrate with opts and opens a store with them,
// closed when the test ends.
func migratedStore(t testing.TB, pool *pgxpool.Pool, opts ...Option) *Store {
	t.Helper()
	ctx := context.Background()
	if err := Migrate(ctx, pool, opts...); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	s, err := New(ctx, pool, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// tracedStore is newStore on a manual clock whose pool's statements go
// to tracer.
func tracedStore(t testing.TB, tracer pgx.QueryTracer) (*Store, *idemtest.Clock) {
	t.Helper()
	pool := newPool(t, func(c *pgxpool.Config) { c.ConnConfig.Tracer = tracer })
	clock := newManualClock()
	return newStore(t, pool, WithClock(clock.Now)), clock
}

// finishers end a claimed key's run, each the way its key names:
// completed, failed, released, and idle, which leaves the lease running
// (to run out, or to be found in progress).
func finishers(ctx context.Context, s *Store, idle string) map[string]func(idemstore.Lease) error {
	return map[string]func(idemstore.Lease) error{
		"completed": func(l idemstore.Lease) error { return s.Complete(ctx, l, idemstore.Result{Data: []byte("r")}) },
		"failed":    func(l idemstore.Lease) error { return s.Fail(ctx, l, idemstore.Result{Data: []byte("e")}) },
		"released":  func(l idemstore.Lease) error { return s.Release(ctx, l) },
		idle:        func(idemstore.Lease) error { return nil },
	}
}

// schemaAtVersion makes a fresh schema holding the records table as the
// first version migrations left it, for tests of an upgrade.
func schemaAtVersion(t testing.TB, pool *pgxpool.Pool, version int) (string, names) {
	t.Helper()
	schema := newSchema(t, pool)
	n := newNames(schema, "idem_records")
	stmts := []string{"CREATE SCHEMA " + n.qSchema}
	for _, m := range migrations()[:version] {
		stmts = append(stmts, n.render(m.sql))
	}
	for _, sql := range stmts {
		if _, err := pool.Exec(context.Background(), sql); err != nil {
			t.Fatal(err)
		}
	}
	return schema, n
}

// refusedPool is a pool (connecting lazily) for a server address that
// refuses connections; query is appended to its URL.
func refusedPool(t testing.TB, query string) (*pgxpool.Pool, string) {
	t.Helper()
	addr := testenv.RefusedAddr(t)
	pool, err := pgxpool.New(context.Background(), "postgres://idem@"+addr+"/test"+query)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, addr
}

// newManualClock is a test clock standing at a whole second. Tests move
// it by whole microseconds (Postgres's timestamp precision), so times
// compare exactly.
func newManualClock() *idemtest.Clock {
	return idemtest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
}

// queryCounter is a pgx tracer counting statements (round trips once
// statements are prepared).
type queryCounter struct{ n atomic.Int64 }

func (q *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	q.n.Add(1)
	return ctx
}

func (q *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func token(b byte) (t [16]byte) {
	t[0] = b
	t[15] = 0xAA
	return t
}

func fingerprint(b byte) (f [32]byte) {
	f[0] = b
	f[31] = 0x55
	return f
}
