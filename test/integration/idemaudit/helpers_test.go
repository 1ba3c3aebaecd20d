package idemaudit_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/filestore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemaudit"
	"github.com/idemgen/idemgen/runtime/idemobs"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
	"github.com/idemgen/idemgen/runtime/pgaudit"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// memSink keeps entries in memory, in the order they were recorded.
type memSink struct {
	mu      sync.Mutex
	entries []idemaudit.Entry
}

func (s *memSink) Record(_ context.Context, e idemaudit.Entry) {
	s.mu.Lock()
	s.entries = append(s.entries, e)
	s.mu.Unlock()
}

func (s *memSink) all() []idemaudit.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]idemaudit.Entry(nil), s.entries...)
}

var backends = []string{"memory", "file", "redis", "postgres"}

// env is a Guard over one store, auditing into memory and, on Postgres,
// into a pgaudit table in the test's schema.
type env struct {
	g      *idem.Guard
	mem    *memSink
	pg     *pgaudit.Writer
	pool   *pgxpool.Pool
	schema string
}

func newEnv(t *testing.T, backend string) *env {
	t.Helper()
	e := &env{mem: &memSink{}}
	var store idemstore.Store
	obs := []idem.Observer{idemaudit.New(e.mem)}
	switch backend {
	case "memory":
		store = memstore.New()
	case "file":
		fs, err := filestore.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		store = fs
	case "redis":
		store = redisStore(t)
	case "postgres":
		store, e.pool, e.schema = pgStore(t)
		e.pg = pgaudit.New(e.pool, pgaudit.WithSchema(e.schema), pgaudit.WithErrorHandler(func(err error) { t.Error(err) }))
		t.Cleanup(func() {
			if err := e.pg.Close(context.Background()); err != nil {
				t.Error(err)
			}
		})
		obs = append(obs, idemaudit.New(e.pg))
	}
	e.g = idem.NewGuard(store, idem.WithObserver(idemobs.Multi(obs...)))
	return e
}

func redisStore(t *testing.T) idemstore.Store {
	t.Helper()
	addr := testenv.RedisAddr()
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		testenv.Need(t, "Redis at "+addr, "start one: redis-server --port 6379 --daemonize yes, or set IDEM_REDIS_ADDR", err)
	}
	prefix := "idemaudit-test:" + testenv.RandName() + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		iter := rdb.Scan(ctx, 0, prefix+"*", 500).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		rdb.Close()
	})
	s, err := redisstore.New(context.Background(), rdb, redisstore.WithKeyPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// pgPool connects to IDEM_POSTGRES_URL and makes a schema for this test.
func pgPool(t *testing.T) (*pgxpool.Pool, string) {
	t.Helper()
	url := testenv.PostgresURL()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("IDEM_POSTGRES_URL: %v", err)
	}
	cfg.MaxConns = 8
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		testenv.Need(t, "PostgreSQL at "+url, "start one (trust auth, database test): sudo service postgresql start, or set IDEM_POSTGRES_URL", err)
	}
	schema := "idemaudit_test_" + testenv.RandName()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE") //nolint:errcheck
		pool.Close()
	})
	return pool, schema
}

func pgStore(t *testing.T) (*pgstore.Store, *pgxpool.Pool, string) {
	t.Helper()
	pool, schema := pgPool(t)
	ctx := context.Background()
	if err := pgstore.Migrate(ctx, pool, pgstore.WithSchema(schema)); err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	if err := pgaudit.Migrate(ctx, pool, pgaudit.WithSchema(schema)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, pool, schema
}

// rows runs a one-column query with %s the audit table.
func (e *env) rows(t *testing.T, query string) []string {
	t.Helper()
	rs, err := e.pool.Query(context.Background(), fmt.Sprintf(query, pgx.Identifier{e.schema, "idem_audit"}.Sanitize()))
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rs, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}
