package pgstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// tupleUpdates returns the table's updates and HOT updates as the
// statistics collector reports them, once it reports at least want
// updates (backends send their counts when idle, within a second or so).
func tupleUpdates(t *testing.T, pool *pgxpool.Pool, table string, want int64) (upd, hot int64) {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(15 * time.Second); ; {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		err = c.QueryRow(ctx, `SELECT pg_stat_get_tuples_updated($1::regclass), pg_stat_get_tuples_hot_updated($1::regclass)
			FROM (SELECT pg_stat_clear_snapshot()) x`, table).Scan(&upd, &hot)
		c.Release()
		if err != nil {
			t.Fatal(err)
		}
		if upd >= want || time.Now().After(deadline) {
			return upd, hot
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestFinishIsHOT: the UPDATE that finishes a first execution changes no
// indexed column, so PostgreSQL makes it a HOT update (no new index
// entries): every update of a table that only saw first executions is
// HOT. Before schema version 6 the finish changed the indexed expires_at
// and none was.
func TestFinishIsHOT(t *testing.T) {
	const n = 20
	for _, tc := range []struct {
		name   string
		finish func(s *Store, l idemstore.Lease) error
	}{
		{"complete", func(s *Store, l idemstore.Lease) error {
			return s.Complete(context.Background(), l, idemstore.Result{Data: []byte(`"receipt"`)})
		}},
		{"fail", func(s *Store, l idemstore.Lease) error {
			return s.Fail(context.Background(), l, idemstore.Result{Data: []byte(`"declined"`)})
		}},
		{"release", func(s *Store, l idemstore.Lease) error { return s.Release(context.Background(), l) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := newPool(t, nil)
			s := newStore(t, pool)
			ctx := context.Background()
			for i := range n {
				k := fmt.Sprint("k", i)
				res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: k, Owner: token(1), Fingerprint: fingerprint(1), Lease: time.Minute, TTL: time.Hour})
				if err != nil || res.Status != idemstore.ClaimAcquired {
					t.Fatalf("claim %s: %+v %v", k, res, err)
				}
				if err := tc.finish(s, idemstore.Lease{Key: k, Owner: token(1), Fence: res.Fence, TTL: time.Hour}); err != nil {
					t.Fatal(err)
				}
			}
			upd, hot := tupleUpdates(t, pool, s.Table(), n)
			if upd != n || hot != n {
				t.Errorf("%d updates, %d of them HOT; want %d HOT updates", upd, hot, n)
			}
		})
	}
}

// TestCleanupByIndex: cleanup deletes exactly the rows past their expiry:
// rows from before version 6 (sweep_at '-infinity'), and rows whose finish
// gave them a shorter TTL than their claim did; it gives the former their
// sweep_at, and then finds expired rows through the sweep_at index (never
// a scan of the whole table).
func TestCleanupByIndex(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	ctx := context.Background()
	seedRows(t, s, "old-exp-", 300, "-1 second", "-2 seconds")
	seedRows(t, s, "old-live-", 300, "1 hour", "1 hour")
	for i := range 2000 {
		k := fmt.Sprint("new-", i)
		res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: k, Owner: token(1), Fingerprint: fingerprint(1), Lease: time.Minute, TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ttl := time.Hour
		if i%10 == 0 {
			ttl = time.Microsecond // a failure retained for less than the claim's TTL
		}
		if err := s.Fail(ctx, idemstore.Lease{Key: k, Owner: token(1), Fence: res.Fence, TTL: ttl}, idemstore.Result{Data: []byte(`"x"`)}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Millisecond)
	n, err := s.Cleanup(ctx)
	if err != nil || n != 300+200 {
		t.Fatalf("Cleanup: %d %v, want %d", n, err, 300+200)
	}
	var legacy int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+s.Table()+" WHERE sweep_at = '-infinity'").Scan(&legacy); err != nil || legacy != 0 {
		t.Fatalf("%d rows without sweep_at after Cleanup (%v)", legacy, err)
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{{s.q.cleanup, []any{5000, nil}}, {s.q.backfillSweep, []any{5000}}} {
		if plan := explain(t, pool, s.Table(), q.sql, q.args...); !strings.Contains(plan, "idem_records_sweep_at_idx") || strings.Contains(plan, "Seq Scan") {
			t.Errorf("does not read the sweep_at index:\n%s", plan)
		}
	}
}

// explain returns the plan of sql after ANALYZE of table.
func explain(t *testing.T, pool *pgxpool.Pool, table, sql string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "ANALYZE "+table); err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	rows, err := pool.Query(ctx, "EXPLAIN "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	return plan.String()
}
