package idemqueue_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemcall"
	"github.com/idemgen/idemgen/runtime/idemqueue"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// openers returns, per store kind, a function that opens another store
// over the same records (one per consumer process).
func openers(t *testing.T) map[string]func() idemstore.Store {
	out := map[string]func() idemstore.Store{}
	mem := memstore.New()
	out["memory"] = func() idemstore.Store { return mem }
	prefix := "idemqueue-test:" + testenv.RandName() + ":"
	out["redis"] = func() idemstore.Store {
		addr := testenv.RedisAddr()
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { rdb.Close() })
		testenv.Need(t, "Redis at "+addr, "Start it: redis-server --port 6379, or set IDEM_REDIS_ADDR.", rdb.Ping(context.Background()).Err())
		t.Cleanup(func() {
			keys, _ := rdb.Keys(context.Background(), prefix+"*").Result()
			if len(keys) > 0 {
				rdb.Del(context.Background(), keys...)
			}
		})
		s, err := redisstore.New(context.Background(), rdb, redisstore.WithKeyPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	var schema string
	out["postgres"] = func() idemstore.Store {
		url := testenv.PostgresURL()
		ctx := context.Background()
		pool, err := pgxpool.New(ctx, url)
		if err == nil {
			err = pool.Ping(ctx)
		}
		testenv.Need(t, "PostgreSQL at "+url, "Start it (trust auth, database test): sudo service postgresql start, or set IDEM_POSTGRES_URL.", err)
		t.Cleanup(pool.Close)
		if schema == "" {
			schema = "idemqueue_test_" + testenv.RandName()
			t.Cleanup(func() {
				pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
			})
			if err := pgstore.Migrate(ctx, pool, pgstore.WithSchema(schema)); err != nil {
				t.Fatal(err)
			}
		}
		s, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	return out
}

// TestStores: deliveries of the same events racing on three consumer
// "processes" (own Guard, own store client) over Redis and Postgres: each
// event's handler runs once, every other delivery is a Duplicate (the
// waiters are woken by the store: pub/sub, LISTEN/NOTIFY).
func TestStores(t *testing.T) {
	for _, kind := range []string{"memory", "redis", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			open := openers(t)[kind]
			var consumers []*idemqueue.Consumer
			for range 3 {
				consumers = append(consumers, idemqueue.New(idem.NewGuard(open()), idemcall.WithName("test.stores"),
					idemcall.WithLease(5*time.Second), idemcall.WithWait(10*time.Second)))
			}
			const events, copies = 8, 6
			var handled [events]atomic.Int64
			count := map[idemqueue.Status]int{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for e := range events {
				for c := range copies {
					wg.Add(1)
					go func() {
						defer wg.Done()
						id := "evt-" + string(rune('a'+e))
						st, err := consumers[(e+c)%len(consumers)].Process(context.Background(), id, func(context.Context) error {
							handled[e].Add(1)
							time.Sleep(20 * time.Millisecond)
							return nil
						})
						if err != nil {
							t.Errorf("%s: %v", id, err)
						}
						mu.Lock()
						count[st]++
						mu.Unlock()
					}()
				}
			}
			wg.Wait()
			for e := range events {
				if n := handled[e].Load(); n != 1 {
					t.Errorf("event %d handled %d times", e, n)
				}
			}
			want := map[idemqueue.Status]int{idemqueue.Ran: events, idemqueue.Duplicate: events * (copies - 1)}
			if diff := cmp.Diff(want, count); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
		})
	}
}
