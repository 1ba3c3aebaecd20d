package pgstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// seedRows inserts n rows named <prefix><i> whose expiry is offset from
// the database clock, cycling through the four states.
func seedRows(t testing.TB, s *Store, prefix string, n int, expiresIn, leaseIn string) {
	t.Helper()
	_, err := s.pool.Exec(context.Background(), fmt.Sprintf(`INSERT INTO %s
		(key, state, owner, fence, fingerprint, result, lease_until, expires_at, updated_at)
		SELECT $1 || i, 1 + i %% 4, decode(repeat('01', 16), 'hex'), 1, decode(repeat('02', 32), 'hex'),
			CASE WHEN i %% 4 IN (1, 2) THEN '\x7b7d'::bytea END,
			now() + $3::interval, now() + $2::interval, now()
		FROM generate_series(1, $4::int) AS i`, s.Table()), prefix, expiresIn, leaseIn, n)
	if err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentCleanup: four cleaners delete every expired row exactly
// once and never a live one, while claims revive some expired keys.
func TestConcurrentCleanup(t *testing.T) {
	pool := poolWith(t, 8)
	s := newStore(t, pool)
	ctx := context.Background()
	const expired, live = 4000, 600
	seedRows(t, s, "exp-", expired, "-1 second", "-2 seconds")
	seedRows(t, s, "live-", live/2, "1 hour", "1 hour")
	// In progress with an expired lease: taken over by a claim, but still
	// live for retention purposes (its fence must survive).
	seedRows(t, s, "dead-lease-", live/2, "1 hour", "-1 second")

	var deleted atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				n, err := s.CleanupBatch(ctx, 100)
				if err != nil {
					t.Error(err)
					return
				}
				deleted.Add(int64(n))
				if n == 0 {
					return
				}
			}
		})
	}
	// Meanwhile, claims revive every 10th expired key.
	var revived []string
	wg.Go(func() {
		for i := 1; i <= expired; i += 10 {
			k := fmt.Sprint("exp-", i)
			res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: k, Owner: token(9), Fingerprint: fingerprint(9), Lease: time.Minute, TTL: time.Hour})
			if err != nil || !(res.Status == idemstore.ClaimAcquired || res.Status == idemstore.ClaimTakenOver) {
				t.Errorf("claim %s: %+v %v", k, res, err)
				return
			}
			revived = append(revived, k)
		}
	})
	wg.Wait()
	// Revived keys claimed before a cleaner reached them kept their row
	// (fence 2); the others were deleted and inserted afresh (fence 1).
	var keptByClaim, remaining, liveLeft int64
	err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT
		count(*) FILTER (WHERE key LIKE 'exp-%%' AND fence = 2),
		count(*),
		count(*) FILTER (WHERE key NOT LIKE 'exp-%%')
		FROM %s`, s.Table())).Scan(&keptByClaim, &remaining, &liveLeft)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted %d; of %d revived keys %d were claimed before a cleaner reached them", deleted.Load(), len(revived), keptByClaim)
	if got, want := deleted.Load(), expired-keptByClaim; got != want {
		t.Errorf("cleaners reported %d deletions, want %d (each expired row exactly once)", got, want)
	}
	if liveLeft != live {
		t.Errorf("%d live rows left, want %d: a cleaner deleted a live record", liveLeft, live)
	}
	if want := int64(live + len(revived)); remaining != want {
		t.Errorf("%d rows left, want %d", remaining, want)
	}
	if n, err := s.CleanupBatch(ctx, 1000); n != 0 || err != nil {
		t.Errorf("a final cleanup found %d rows (%v)", n, err)
	}
}

func TestSweeper(t *testing.T) {
	var errs atomic.Int64
	s := newStore(t, nil, WithSweeper(20*time.Millisecond), WithCleanupBatch(7),
		WithErrorHandler(func(error) { errs.Add(1) }))
	seedRows(t, s, "exp-", 50, "-1 second", "-1 second")
	seedRows(t, s, "live-", 5, "1 hour", "1 hour")
	deadline := time.Now().Add(5 * time.Second)
	for {
		var n int
		if err := s.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+s.Table()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rows left after 5s of sweeping, want the 5 live ones", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Close()
	if errs.Load() != 0 {
		t.Errorf("%d sweeper errors", errs.Load())
	}
}

// partitionedDDL is the records table of the first migration, hash
// partitioned in four as docs/POSTGRES.md suggests for very large tables:
// create it, then run Migrate.
func partitionedDDL(t *testing.T, schema string) string {
	t.Helper()
	n := newNames(schema, "idem_records")
	sql := n.render(migrations()[0].sql)
	start := strings.Index(sql, "CREATE TABLE IF NOT EXISTS "+n.qTable)
	end := strings.Index(sql[max(start, 0):], ") WITH (fillfactor = 90);")
	if start < 0 || end < 0 {
		t.Fatal("migration 1 no longer creates the records table as this test expects")
	}
	ddl := []string{sql[start:start+end] + ") PARTITION BY HASH (key)"}
	for i := range 4 {
		part := pgx.Identifier{schema, fmt.Sprintf("idem_records_p%d", i)}.Sanitize()
		ddl = append(ddl, fmt.Sprintf("CREATE TABLE %s PARTITION OF %s FOR VALUES WITH (MODULUS 4, REMAINDER %d)", part, n.qTable, i))
	}
	return strings.Join(ddl, ";\n")
}

// TestPartitionedTable: the store works unchanged on a hash-partitioned
// table, and its cleanup (by key there: a ctid is only unique within a
// partition) deletes exactly the expired rows.
func TestPartitionedTable(t *testing.T) {
	pool := newPool(t, nil)
	ctx := context.Background()
	schema := newSchema(t, pool)
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, partitionedDDL(t, schema)); err != nil {
		t.Fatal(err)
	}
	s := migratedStore(t, pool, WithSchema(schema))
	if s.q.cleanup != s.q.cleanupByKey {
		t.Fatal("partitioned table not detected")
	}
	seedRows(t, s, "exp-", 1000, "-1 second", "-2 seconds")
	seedRows(t, s, "live-", 100, "1 hour", "1 hour")
	g := idem.NewGuard(s)
	if v, err := call(ctx, g, &spec, "k", func(context.Context) (string, error) { return "v", nil }); err != nil || v != "v" {
		t.Fatal(v, err)
	}
	n, err := s.Cleanup(ctx)
	if err != nil || n != 1000 {
		t.Fatalf("Cleanup: %d %v, want 1000", n, err)
	}
	var left int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+s.Table()).Scan(&left); err != nil || left != 101 {
		t.Fatalf("%d rows left (%v), want 101", left, err)
	}
	if v, err := call(ctx, g, &spec, "k", func(context.Context) (string, error) { return "again", nil }); err != nil || v != "v" {
		t.Fatalf("replay on a partitioned table: %q %v", v, err)
	}
}
