// Package storeopen opens the stores the test module's integration tests
// race several "processes" over: each process gets a client of its own
// over one key space that the test shares out.
package storeopen

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// Kinds are the store kinds Open knows.
var Kinds = []string{"memory", "redis", "postgres"}

// Open returns a function that opens another client (its own connection
// pool, as another process would have) over one fresh key space of kind:
// "memory" (one store, shared), "redis" (a key prefix made of name) or
// "postgres" (a schema made of name, migrated). A server that does not
// answer skips the test, or fails it under CI=true. Clients are closed and
// the key space removed at cleanup.
func Open(t *testing.T, kind, name string) func() idemstore.Store {
	t.Helper()
	switch kind {
	case "redis":
		return openRedis(t, name+":"+testenv.RandName()+":")
	case "postgres":
		return openPostgres(t, name+"_"+testenv.RandName())
	}
	s := memstore.New()
	return func() idemstore.Store { return s }
}

func openRedis(t *testing.T, prefix string) func() idemstore.Store {
	ctx := context.Background()
	addr := testenv.RedisAddr()
	probe := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { probe.Close() })
	testenv.Need(t, "Redis at "+addr, "Start it: redis-server --port 6379, or set IDEM_REDIS_ADDR.", probe.Ping(ctx).Err())
	t.Cleanup(func() {
		if keys, _ := probe.Keys(context.Background(), prefix+"*").Result(); len(keys) > 0 {
			probe.Del(context.Background(), keys...)
		}
	})
	return func() idemstore.Store {
		rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
		t.Cleanup(func() { rdb.Close() })
		s, err := redisstore.New(ctx, rdb, redisstore.WithKeyPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

func openPostgres(t *testing.T, schema string) func() idemstore.Store {
	ctx := context.Background()
	url := testenv.PostgresURL()
	pool, err := pgxpool.New(ctx, url)
	if err == nil {
		err = pool.Ping(ctx)
	}
	testenv.Need(t, "PostgreSQL at "+url, "Start it (trust auth, database test): sudo service postgresql start, or set IDEM_POSTGRES_URL.", err)
	t.Cleanup(pool.Close)
	t.Cleanup(func() {
		pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE") //nolint:errcheck
	})
	if err := pgstore.Migrate(ctx, pool, pgstore.WithSchema(schema)); err != nil {
		t.Fatal(err)
	}
	return func() idemstore.Store {
		p, err := pgxpool.New(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		s, err := pgstore.New(ctx, p, pgstore.WithSchema(schema))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}
