package pgstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

// TestConformance runs the shared store suite against the real server,
// leases judged by the database clock.
func TestConformance(t *testing.T) {
	pool := poolWith(t, 16)
	idemtest.RunStoreSuite(t, idemtest.Harness{
		New: func(t *testing.T, _ func() time.Time) idemstore.Store {
			return newStore(t, pool, WithPollInterval(50*time.Millisecond))
		},
		// Real time: long enough that 200 concurrent claims through a
		// 16-connection pool on a loaded 2-core machine under -race all
		// land within one lease (else a legitimate takeover makes a
		// second owner).
		Lease:   time.Second,
		Corrupt: corruptRow,
		Legacy:  legacyRow,
		Raw:     rawRows,
	})
}

// legacyRow clears key's claimed_at, as a row claimed before schema
// version 4 has none.
func legacyRow(t *testing.T, s idemstore.Store, key string) {
	st := s.(*Store)
	tag, err := st.pool.Exec(context.Background(), `UPDATE `+st.n.qTable+` SET claimed_at = NULL WHERE key = $1`, key)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("clearing claimed_at of %s: %v (%d rows)", key, err, tag.RowsAffected())
	}
}

// corruptRow gives key's row a state no build writes.
func corruptRow(t *testing.T, s idemstore.Store, key string) {
	st := s.(*Store)
	tag, err := st.pool.Exec(context.Background(), `UPDATE `+st.n.qTable+` SET state = 9 WHERE key = $1`, key)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("corrupting %s: %v (%d rows)", key, err, tag.RowsAffected())
	}
}

// TestConformanceManualClock runs the suite again with the suite's manual
// clock sent as each statement's time (WithClock).
func TestConformanceManualClock(t *testing.T) {
	pool := poolWith(t, 8)
	idemtest.RunStoreSuite(t, idemtest.Harness{
		New: func(t *testing.T, now func() time.Time) idemstore.Store {
			return newStore(t, pool, WithClock(func() time.Time { return now().Truncate(time.Microsecond) }),
				WithPollInterval(20*time.Millisecond))
		},
		ManualClock: true,
		Lease:       300 * time.Millisecond,
		Legacy:      legacyRow,
	})
}

var spec = idem.Spec{Name: "pgstore.test", Lease: 5 * time.Second, TTL: time.Hour}

func call(ctx context.Context, g *idem.Guard, sp *idem.Spec, id string, fn func(context.Context) (string, error)) (string, error) {
	c := g.Begin(sp, id)
	return idem.Do(ctx, c, fn)
}

// TestRoundTrips counts statements through a Guard: a first execution is
// two (claim, complete), a replay one, and heartbeats stay off the path.
func TestRoundTrips(t *testing.T) {
	counter := &queryCounter{}
	pool := newPool(t, func(c *pgxpool.Config) {
		c.MaxConns = 1 // one connection: statements prepared once, counted exactly
		c.ConnConfig.Tracer = counter
	})
	s := newStore(t, pool)
	g := idem.NewGuard(s)
	ctx := context.Background()
	run := func(ctx context.Context) (string, error) { return "done", nil }
	// Warm up: the first use of each statement on a connection also
	// prepares it (one extra round trip, once per connection).
	if _, err := call(ctx, g, &spec, "warm", run); err != nil {
		t.Fatal(err)
	}
	if _, err := call(ctx, g, &spec, "warm", run); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		want int64
	}{
		{"first execution", 2},
		{"replay", 1},
		{"second replay", 1},
	}
	for _, tt := range tests {
		before := counter.n.Load()
		v, err := call(ctx, g, &spec, "order-1", run)
		if err != nil || v != "done" {
			t.Fatalf("%s: %q, %v", tt.name, v, err)
		}
		if got := counter.n.Load() - before; got != tt.want {
			t.Errorf("%s: %d statements, want %d", tt.name, got, tt.want)
		}
	}
}

// TestWaitWakesOnNotify: a waiter with a 1-minute poll interval returns
// promptly when the owner completes, so the wake-up came from NOTIFY; many
// waiters share the store's one LISTEN connection.
func TestWaitWakesOnNotify(t *testing.T) {
	pool := poolWith(t, 8)
	s := newStore(t, pool, WithPollInterval(time.Minute))
	ctx := context.Background()
	lease := idemstore.Lease{Key: "w", Owner: token(1), Duration: time.Minute, TTL: time.Hour}
	res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "w", Owner: token(1), Fingerprint: fingerprint(1), Lease: time.Minute, TTL: time.Hour})
	if err != nil || res.Status != idemstore.ClaimAcquired {
		t.Fatalf("claim: %+v %v", res, err)
	}
	lease.Fence = res.Fence
	const waiters = 5
	done := make(chan error, waiters)
	for range waiters {
		go func() {
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			done <- s.Wait(wctx, "w")
		}()
	}
	// Let the waiters subscribe and the listener connect.
	deadline := time.Now().Add(5 * time.Second)
	for !s.lis.up.Load() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	var listeners int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE query = $1`,
		`LISTEN "`+s.n.channel+`"`).Scan(&listeners); err != nil {
		t.Fatal(err)
	}
	if listeners != 1 {
		t.Errorf("%d LISTEN connections for %d waiters, want 1", listeners, waiters)
	}
	start := time.Now()
	if err := s.Complete(ctx, lease, idemstore.Result{Data: []byte(`"ok"`)}); err != nil {
		t.Fatal(err)
	}
	for range waiters {
		if err := <-done; err != nil {
			t.Fatalf("Wait: %v", err)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("waiters woke after %v: notification lost", d)
	}
}

// TestWaitLeaseExpiry: with no notification at all, a waiter returns once
// the owner's lease ends by the database clock.
func TestWaitLeaseExpiry(t *testing.T) {
	s := newStore(t, nil, WithPollInterval(time.Minute))
	ctx := context.Background()
	if _, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "e", Owner: token(1), Fingerprint: fingerprint(1), Lease: 200 * time.Millisecond, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.Wait(wctx, "e"); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "e", Owner: token(2), Fingerprint: fingerprint(1), Lease: time.Second, TTL: time.Hour})
	if err != nil || res.Status != idemstore.ClaimTakenOver || res.Fence != 2 {
		t.Fatalf("claim after expiry: %+v %v, want taken_over fence 2", res, err)
	}
	// A canceled wait returns the ctx error.
	cctx, ccancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer ccancel()
	if err := s.Wait(cctx, "e"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a live lease with a short ctx: %v, want DeadlineExceeded", err)
	}
}

// TestGuardWaitMode: a duplicate in wait mode from another Guard (another
// "process") blocks on the running call and replays its result.
func TestGuardWaitMode(t *testing.T) {
	pool := poolWith(t, 8)
	s := newStore(t, pool)
	g1, g2 := idem.NewGuard(s), idem.NewGuard(s)
	sp := spec
	sp.OnDuplicate = idem.DuplicateWait
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := call(ctx, g1, &sp, "k", func(context.Context) (string, error) {
			close(started)
			<-release
			return "first", nil
		})
		first <- err
	}()
	<-started
	second := make(chan string, 1)
	go func() {
		v, err := call(ctx, g2, &sp, "k", func(context.Context) (string, error) { return "second", nil })
		if err != nil {
			v = err.Error()
		}
		second <- v
	}()
	time.Sleep(50 * time.Millisecond)
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if v := <-second; v != "first" {
		t.Fatalf("waiting duplicate got %q, want the first call's result", v)
	}
}

func TestSchemaErrors(t *testing.T) {
	pool := newPool(t, nil)
	ctx := context.Background()

	t.Run("missing", func(t *testing.T) {
		schema := newSchema(t, pool)
		_, err := New(ctx, pool, WithSchema(schema))
		if !errors.Is(err, ErrSchemaMissing) || !strings.Contains(err.Error(), "pgstore.Migrate") {
			t.Fatalf("New without migration: %v, want ErrSchemaMissing telling to run Migrate", err)
		}
	})
	t.Run("dropped after New", func(t *testing.T) {
		s := newStore(t, pool)
		if _, err := pool.Exec(ctx, "DROP TABLE "+s.Table()); err != nil {
			t.Fatal(err)
		}
		_, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "k", Owner: token(1), Fingerprint: fingerprint(1), Lease: time.Second, TTL: time.Hour})
		if !errors.Is(err, ErrSchemaMissing) || !strings.Contains(err.Error(), "Migrate") {
			t.Fatalf("claim on a dropped table: %v, want ErrSchemaMissing", err)
		}
	})
	t.Run("newer schema", func(t *testing.T) {
		s := newStore(t, pool)
		if _, err := pool.Exec(ctx, "INSERT INTO "+s.n.qVersion+" (version) VALUES (99)"); err != nil {
			t.Fatal(err)
		}
		if _, err := New(ctx, pool, WithSchema(s.n.schema)); !errors.Is(err, ErrSchemaTooNew) {
			t.Fatalf("New on a newer schema: %v, want ErrSchemaTooNew", err)
		}
		if err := Migrate(ctx, pool, WithSchema(s.n.schema)); !errors.Is(err, ErrSchemaTooNew) {
			t.Fatalf("Migrate on a newer schema: %v, want ErrSchemaTooNew", err)
		}
	})
	t.Run("malformed rows", func(t *testing.T) {
		s := newStore(t, pool)
		rows := []struct {
			key, set string
			tooNew   bool
		}{
			{"bad-state", "state = 9", false},
			{"bad-owner", "owner = '\\x0102'::bytea", false},
			{"bad-fingerprint", "fingerprint = '\\x01'::bytea", false},
			{"no-result", "state = 2, result = NULL", false},
			{"bad-fence", "fence = 0", false},
			{"newer-row", "format = 7", true},
		}
		for _, r := range rows {
			if _, err := s.Claim(ctx, idemstore.ClaimRequest{Key: r.key, Owner: token(1), Fingerprint: fingerprint(1), Lease: time.Minute, TTL: time.Hour}); err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, "UPDATE "+s.Table()+" SET "+r.set+" WHERE key = $1", r.key); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range rows {
			t.Run(r.key, func(t *testing.T) {
				_, err := s.Claim(ctx, idemstore.ClaimRequest{Key: r.key, Owner: token(2), Fingerprint: fingerprint(1), Lease: time.Minute, TTL: time.Hour})
				if !errors.Is(err, idem.ErrCorruptRecord) {
					t.Errorf("Claim: %v, want ErrCorruptRecord", err)
				}
				if r.tooNew && !errors.Is(err, ErrSchemaTooNew) {
					t.Errorf("Claim: %v, want ErrSchemaTooNew too", err)
				}
				if _, err := s.Get(ctx, r.key); !errors.Is(err, idem.ErrCorruptRecord) {
					t.Errorf("Get: %v, want ErrCorruptRecord", err)
				}
				// Never treated as absent: the row was not overwritten.
				var owner []byte
				if err := pool.QueryRow(ctx, "SELECT owner FROM "+s.Table()+" WHERE key = $1", r.key).Scan(&owner); err != nil {
					t.Fatal(err)
				}
				if len(owner) == 16 && owner[0] == 2 {
					t.Errorf("the malformed row was overwritten by a claim")
				}
			})
		}
	})
}

func TestMigrate(t *testing.T) {
	pool := poolWith(t, 8)
	ctx := context.Background()
	t.Run("concurrent and repeated", func(t *testing.T) {
		schema := newSchema(t, pool)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 4 {
			wg.Go(func() {
				errs <- Migrate(ctx, pool, WithSchema(schema), WithTable("t"))
				errs <- Migrate(ctx, pool, WithSchema(schema), WithTable("t"))
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		s, err := New(ctx, pool, WithSchema(schema), WithTable("t"))
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	})
	t.Run("upgrade from version 1", func(t *testing.T) {
		schema, n := schemaAtVersion(t, pool, 1)
		if _, err := New(ctx, pool, WithSchema(schema)); !errors.Is(err, ErrSchemaMissing) || !strings.Contains(err.Error(), "run pgstore.Migrate") {
			t.Fatalf("New on version 1: %v, want ErrSchemaMissing asking to run Migrate", err)
		}
		if err := Migrate(ctx, pool, WithSchema(schema)); err != nil {
			t.Fatal(err)
		}
		s, err := New(ctx, pool, WithSchema(schema))
		if err != nil {
			t.Fatalf("New after the upgrade: %v", err)
		}
		s.Close()
		var versions []int32
		rows, _ := pool.Query(ctx, "SELECT version FROM "+n.qVersion+" ORDER BY version")
		for rows.Next() {
			var v int32
			rows.Scan(&v) //nolint:errcheck
			versions = append(versions, v)
		}
		if diff := cmp.Diff([]int32{1, 2, 3, 4, 5, 6, 7}, versions); diff != "" {
			t.Errorf("recorded versions (-want +got):\n%s", diff)
		}
	})
	t.Run("upgrade from version 3 keeps its rows", func(t *testing.T) {
		// Rows written at version 3 have no claimed_at: they read with a
		// zero ClaimedAt, replay, and their owners heartbeat and complete.
		schema, n := schemaAtVersion(t, pool, 3)
		owner, fp := token(1), fingerprint(1)
		if _, err := pool.Exec(ctx, `INSERT INTO `+n.qTable+` (key, state, owner, fence, fingerprint, result, lease_until, expires_at, updated_at)
			VALUES ('done', 2, $1, 3, $2, '"v"', now(), now() + interval '1 hour', now() - interval '1 minute'),
			       ('running', 1, $1, 5, $2, NULL, now() + interval '1 hour', now() + interval '2 hours', now())`, owner[:], fp[:]); err != nil {
			t.Fatal(err)
		}
		s := migratedStore(t, pool, WithSchema(schema))
		for _, key := range []string{"done", "running"} {
			r, err := s.Get(ctx, key)
			if err != nil || !r.ClaimedAt.IsZero() || r.UpdatedAt.IsZero() {
				t.Fatalf("Get(%s) of a version-3 row = %+v, %v; want it with a zero ClaimedAt", key, r, err)
			}
		}
		res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "done", Owner: token(2), Fingerprint: fp, Lease: time.Second, TTL: time.Hour})
		if err != nil || res.Status != idemstore.ClaimCompleted || string(res.Result.Data) != `"v"` {
			t.Fatalf("replay of a version-3 row = %+v, %v", res, err)
		}
		l := idemstore.Lease{Key: "running", Owner: owner, Fence: 5, Duration: time.Minute, TTL: time.Hour}
		if err := s.Heartbeat(ctx, l); err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(ctx, l, idemstore.Result{Data: []byte(`1`)}); err != nil {
			t.Fatal(err)
		}
		if r, err := s.Get(ctx, "running"); err != nil || r.State != idemstore.StateCompleted || !r.ClaimedAt.IsZero() {
			t.Fatalf("version-3 row after heartbeat and completion = %+v, %v", r, err)
		}
	})
	t.Run("upgrade from version 4 keeps its rows", func(t *testing.T) {
		// Rows written at version 4 have no steps: an owner running
		// across the upgrade records steps, and a claim after its release
		// resumes them, ordered or not. Version 4's ordered claim
		// function stays for binaries of version 4.
		schema, n := schemaAtVersion(t, pool, 4)
		owner, fp := token(1), fingerprint(1)
		if _, err := pool.Exec(ctx, `INSERT INTO `+n.qTable+` (key, state, owner, fence, fingerprint, result, lease_until, expires_at, updated_at, claimed_at)
			VALUES ('running', 1, $1, 5, $2, NULL, now() + interval '1 hour', now() + interval '2 hours', now(), now()),
			       ('e:{x}:ordered', 1, $1, 2, $2, NULL, now() + interval '1 hour', now() + interval '2 hours', now(), now())`, owner[:], fp[:]); err != nil {
			t.Fatal(err)
		}
		s := migratedStore(t, pool, WithSchema(schema))
		for _, key := range []string{"running", "e:{x}:ordered"} {
			l := idemstore.Lease{Key: key, Owner: owner, Fence: 5, Duration: time.Minute, TTL: time.Hour}
			req := idemstore.ClaimRequest{Key: key, Owner: token(2), Fingerprint: fp, Lease: time.Minute, TTL: time.Hour}
			if key != "running" {
				l.Fence = 2
				req.Order = idemstore.OrderClaim{Key: "e:{x}", At: time.Now()}
			}
			if err := s.SaveStep(ctx, l, "charge", []byte("ch")); err != nil {
				t.Fatal(err)
			}
			if err := s.Release(ctx, l); err != nil {
				t.Fatal(err)
			}
			res, err := s.Claim(ctx, req)
			if err != nil || res.Status != idemstore.ClaimAcquired || string(res.Steps["charge"]) != "ch" {
				t.Fatalf("claim of %s after the upgrade = %+v, %v; want it with its step", key, res, err)
			}
		}
		var claimed bool
		if err := pool.QueryRow(ctx, `SELECT claimed FROM `+n.qClaimOrdered+`('v4', $1, $2, 1000000, 1000000, NULL, 'e:{y}', now(), 0, false)`,
			owner[:], fp[:]).Scan(&claimed); err != nil || !claimed {
			t.Fatalf("version 4's ordered claim after the upgrade: %v, %v", claimed, err)
		}
	})
	t.Run("own migration tool", func(t *testing.T) {
		schema := newSchema(t, pool)
		if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
			t.Fatal(err)
		}
		sql := MigrationSQL(WithSchema(schema), WithTable("Records"))
		for range 2 { // idempotent
			if _, err := pool.Exec(ctx, sql); err != nil {
				t.Fatalf("applying MigrationSQL: %v\n%s", err, sql)
			}
		}
		s, err := New(ctx, pool, WithSchema(schema), WithTable("Records"))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "k", Owner: token(1), Fingerprint: fingerprint(1), Lease: time.Second, TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestCanceledCtx: a canceled ctx changes nothing and wraps ctx.Err().
func TestCanceledCtx(t *testing.T) {
	s := newStore(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l := idemstore.Lease{Key: "k", Owner: token(1), Fence: 1, Duration: time.Second, TTL: time.Hour}
	_, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "k", Owner: token(1), Fingerprint: fingerprint(1), Lease: time.Second, TTL: time.Hour})
	errs := map[string]error{
		"claim":     err,
		"heartbeat": s.Heartbeat(ctx, l),
		"complete":  s.Complete(ctx, l, idemstore.Result{}),
		"release":   s.Release(ctx, l),
		"delete":    s.Delete(ctx, "k"),
		"wait":      s.Wait(ctx, "k"),
	}
	_, errs["get"] = s.Get(ctx, "k")
	_, errs["cleanup"] = s.CleanupBatch(ctx, 10)
	for op, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want context.Canceled", op, err)
		}
	}
	if _, err := s.Get(context.Background(), "k"); !errors.Is(err, idem.ErrNotFound) {
		t.Errorf("after canceled claim: %v, want nothing stored", err)
	}
}

// TestWaitSurvivesListenerLoss: the LISTEN connection is terminated while a
// waiter blocks; the store reconnects, and the waiter still wakes when the
// owner completes (by the new LISTEN, or by polling while it reconnects).
func TestWaitSurvivesListenerLoss(t *testing.T) {
	pool := poolWith(t, 4)
	var listenerErrs atomic.Int64
	s := newStore(t, pool, WithPollInterval(time.Minute), WithErrorHandler(func(error) { listenerErrs.Add(1) }))
	ctx := context.Background()
	res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "w", Owner: token(1), Fingerprint: fingerprint(1), Lease: time.Minute, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		done <- s.Wait(wctx, "w")
	}()
	listenPID := func() int {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			var pid int
			if err := pool.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE query = $1`, `LISTEN "`+s.n.channel+`"`).Scan(&pid); err == nil {
				return pid
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("no LISTEN connection")
		return 0
	}
	old := listenPID()
	if _, err := pool.Exec(ctx, "SELECT pg_terminate_backend($1)", old); err != nil {
		t.Fatal(err)
	}
	// Wait for the reconnect, then complete: the new LISTEN must carry it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		var pid int
		err := pool.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE query = $1`, `LISTEN "`+s.n.channel+`"`).Scan(&pid)
		if err == nil && pid != old && s.lis.up.Load() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the listener did not reconnect")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	if err := s.Complete(ctx, idemstore.Lease{Key: "w", Owner: token(1), Fence: res.Fence, Duration: time.Minute, TTL: time.Hour}, idemstore.Result{Data: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("waiter woke %v after the completion", d)
	}
	if listenerErrs.Load() == 0 {
		t.Error("the lost listener connection was not reported to the error handler")
	}
}

// rawRows reads every row of the store's tables, each column as pgx
// received it (bytea in binary form), as a reader of the database or its
// dumps would.
func rawRows(t *testing.T, s idemstore.Store) [][]byte {
	st := s.(*Store)
	var out [][]byte
	tables := []string{st.n.qTable, st.n.qOrder, st.n.qItems}
	for _, table := range tables {
		rows, err := st.pool.Query(context.Background(), `SELECT * FROM `+table)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			for _, v := range rows.RawValues() {
				out = append(out, append([]byte(nil), v...))
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
