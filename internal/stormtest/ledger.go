package stormtest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemcall"
	"github.com/idemgen/idemgen/runtime/idemqueue"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

const pgHint = "Start PostgreSQL on 127.0.0.1:5432 with a database test (scripts/base-services.sh), or set IDEM_POSTGRES_URL."

// Rows is what the ledger reads of a query's result (pgx.Rows).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// DB is what the ledger needs of a PostgreSQL pool (*pgxpool.Pool), so
// that this module need not require pgx.
type DB[T any, R Rows] interface {
	Ping(ctx context.Context) error
	Exec(ctx context.Context, sql string, args ...any) (T, error)
	Query(ctx context.Context, sql string, args ...any) (R, error)
	Close()
}

// PGWorker is the part of a worker's configuration that the queue storms
// over a PostgreSQL store share.
type PGWorker struct {
	PGURL, Schema    string
	Goroutines       int
	Lease            time.Duration
	HoldMin, HoldMax time.Duration
	NackEvery        uint32 // 1 in NackEvery IDs fails its first run
}

// PGWorkerOf is the PGWorker of a storm of size sz over schema.
func PGWorkerOf(sz QueueSize, schema string) PGWorker {
	return PGWorker{PGURL: testenv.PostgresURL(), Schema: schema, Goroutines: sz.Goroutines, Lease: time.Second,
		HoldMin: sz.Hold / 2, HoldMax: 2 * sz.Hold, NackEvery: sz.NackEvery}
}

// OpenPG opens a worker's pool on w.PGURL (pool: pgxpool.New), its store
// on the pool (store: pgstore.New, with opts), and the idemqueue consumer
// over the store; done closes them.
func OpenPG[P interface{ Close() }, S interface {
	idemstore.Store
	Close() error
}, O any](ctx context.Context, w PGWorker, pool func(context.Context, string) (P, error),
	store func(context.Context, P, ...O) (S, error), opts ...O) (s S, q *idemqueue.Consumer, done func(), err error) {
	p, err := pool(ctx, w.PGURL)
	if err != nil {
		return s, nil, nil, err
	}
	if s, err = store(ctx, p, opts...); err != nil {
		p.Close()
		return s, nil, nil, err
	}
	q = idemqueue.New(idem.NewGuard(s), idemcall.WithName("storm"), idemcall.WithLease(w.Lease), idemcall.WithWait(3*w.Lease))
	return s, q, func() { s.Close(); p.Close() }, nil
}

// LedgerInsert is the statement a worker's handler runs as its side
// effect, in the transaction that completes the idempotency record:
// $1 the message ID, $2 the fence, $3 the process ID.
func LedgerInsert(schema string) string {
	return `INSERT INTO ` + ledgerTable(schema) + ` (id, fence, pid) VALUES ($1, $2, $3)`
}

// LedgerArgs are LedgerInsert's arguments for message id, in a handler
// (ctx carries the fence).
func LedgerArgs(ctx context.Context, id string) []any {
	fence, _ := idem.FenceFrom(ctx)
	return []any{id, int64(fence), os.Getpid()}
}

func ledgerTable(schema string) string { return quoteIdent(schema) + `.ledger` }

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// NeedLedger takes db (and err, from opening it) to the machine's
// PostgreSQL, or stops the test as testenv.Need does; migrate creates the
// store's tables in schema, and NeedLedger adds the ledger table. The
// schema is dropped and db closed at cleanup. It returns the ledger's
// rows per message ID.
func NeedLedger[T any, R Rows](ctx context.Context, t *testing.T, db DB[T, R], err error, schema string, migrate func(context.Context) error) func() map[string]int {
	t.Helper()
	if err == nil {
		err = db.Ping(ctx)
	}
	testenv.Need(t, "PostgreSQL at "+testenv.PostgresURL(), pgHint, err)
	t.Cleanup(db.Close)
	if err := migrate(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Exec(context.Background(), `DROP SCHEMA `+quoteIdent(schema)+` CASCADE`) //nolint:errcheck
	})
	if _, err := db.Exec(ctx, `CREATE TABLE `+ledgerTable(schema)+` (id text NOT NULL, fence bigint NOT NULL, pid int NOT NULL, at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	return func() map[string]int {
		rows, err := db.Query(ctx, `SELECT id, count(*) FROM `+ledgerTable(schema)+` GROUP BY id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		m := map[string]int{}
		for rows.Next() {
			var id string
			var n int
			if err := rows.Scan(&id, &n); err != nil {
				t.Fatal(err)
			}
			m[id] = n
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return m
	}
}
