package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// lockRow holds a row lock on key in a transaction until the returned
// func is called, so a store statement touching the row blocks mid-way.
func lockRow(t *testing.T, s *Store, key string) (unlock func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1 FROM "+s.Table()+" WHERE key = $1 FOR UPDATE", key); err != nil {
		t.Fatal(err)
	}
	return func() { tx.Rollback(ctx) } //nolint:errcheck
}

// killBlocked terminates the backend running a statement of s that starts
// with prefix and is waiting for a lock.
func killBlocked(t *testing.T, s *Store, prefix string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var pid int
		err := s.pool.QueryRow(ctx, `SELECT pid FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE $1 AND position($2 in query) > 0 LIMIT 1`,
			prefix+"%", s.Table()).Scan(&pid)
		if err == nil {
			var ok bool
			if err := s.pool.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&ok); err != nil || !ok {
				t.Fatalf("pg_terminate_backend(%d): %v %v", pid, ok, err)
			}
			return
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no blocked %q statement found", prefix)
}

func getRecord(t *testing.T, s *Store, key string) idemstore.Record {
	t.Helper()
	r, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get %s: %v", key, err)
	}
	return r
}

// faultRig is a store on a pool of four connections, room for a row lock,
// a blocked statement and the one that kills it, and a Guard over it.
func faultRig(t *testing.T) (*Store, *idem.Guard) {
	t.Helper()
	s := newStore(t, poolWith(t, 4))
	return s, idem.NewGuard(s)
}

// TestKilledMidClaim: the claim's connection dies while it waits on the
// row: the caller gets a typed error, the function does not run, the row
// is untouched, and the next claim acquires it exactly once.
func TestKilledMidClaim(t *testing.T) {
	s, g := faultRig(t)
	ctx := context.Background()
	sp := spec
	// A released record: the claim will try to take it and block on the lock.
	key := "idem:" + sp.Name + ":v0:"
	var runs atomic.Int64
	fn := func(context.Context) (string, error) { runs.Add(1); return "ran", nil }
	failing := func(context.Context) (string, error) { return "", errors.New("transient") }
	if _, err := call(ctx, g, &sp, "k", failing); err == nil {
		t.Fatal("want the failing call's error")
	}
	keyOf := func() string {
		var k string
		if err := s.pool.QueryRow(ctx, "SELECT key FROM "+s.Table()+" WHERE key LIKE $1", key+"%").Scan(&k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	k := keyOf()
	before := getRecord(t, s, k)
	if before.State != idemstore.StateReleased || before.Fence != 1 {
		t.Fatalf("setup: %+v", before)
	}

	unlock := lockRow(t, s, k)
	errc := make(chan error, 1)
	go func() {
		_, err := call(ctx, g, &sp, "k", fn)
		errc <- err
	}()
	killBlocked(t, s, "WITH cur AS")
	err := <-errc
	unlock()
	if !errors.Is(err, idem.ErrStoreUnavailable) {
		t.Fatalf("claim on a killed connection: %v, want ErrStoreUnavailable", err)
	}
	if runs.Load() != 0 {
		t.Fatal("the function ran although its claim failed")
	}
	if after := getRecord(t, s, k); after.State != idemstore.StateReleased || after.Fence != 1 || after.Owner != before.Owner {
		t.Fatalf("record changed by a killed claim: %+v", after)
	}
	v, err := call(ctx, g, &sp, "k", fn)
	if err != nil || v != "ran" || runs.Load() != 1 {
		t.Fatalf("retry: %q %v (runs %d)", v, err, runs.Load())
	}
	if r := getRecord(t, s, k); r.State != idemstore.StateCompleted || r.Fence != 2 {
		t.Fatalf("after retry: %+v, want completed at fence 2", r)
	}
}

// TestKilledMidComplete: the completion's connection dies: the caller
// gets its value with ErrStoreUnavailable ("ran but not recorded"), the
// record stays in progress with no result, a duplicate sees it in
// progress (never two owners), and after the lease a takeover completes it.
func TestKilledMidComplete(t *testing.T) {
	s, g := faultRig(t)
	ctx := context.Background()
	sp := spec
	sp.Lease = 600 * time.Millisecond
	var runs atomic.Int64
	proceed := make(chan struct{})
	fn := func(ctx context.Context) (string, error) {
		if runs.Add(1) == 1 {
			<-proceed
		}
		return "ran", nil
	}
	type out struct {
		v   string
		err error
	}
	outc := make(chan out, 1)
	go func() {
		v, err := call(ctx, g, &sp, "k", fn)
		outc <- out{v, err}
	}()
	var k string
	deadline := time.Now().Add(5 * time.Second)
	for s.pool.QueryRow(ctx, "SELECT key FROM "+s.Table()).Scan(&k) != nil {
		if time.Now().After(deadline) {
			t.Fatal("no record claimed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	unlock := lockRow(t, s, k)
	close(proceed)
	killBlocked(t, s, "UPDATE "+s.n.qTable+" SET state")
	o := <-outc
	unlock()
	if !errors.Is(o.err, idem.ErrStoreUnavailable) || o.v != "ran" {
		t.Fatalf("complete on a killed connection: %q %v, want the value and ErrStoreUnavailable", o.v, o.err)
	}
	r := getRecord(t, s, k)
	if r.State != idemstore.StateInProgress || r.Fence != 1 || r.Result != nil {
		t.Fatalf("record after a killed completion: %+v, want in progress without a result", r)
	}
	g2 := idem.NewGuard(s) // another process
	if _, err := call(ctx, g2, &sp, "k", fn); !errors.Is(err, idem.ErrInProgress) {
		t.Fatalf("duplicate during the lease: %v, want ErrInProgress", err)
	}
	time.Sleep(sp.Lease + 50*time.Millisecond)
	if v, err := call(ctx, g2, &sp, "k", fn); err != nil || v != "ran" {
		t.Fatalf("takeover: %q %v", v, err)
	}
	if r := getRecord(t, s, k); r.State != idemstore.StateCompleted || r.Fence != 2 {
		t.Fatalf("after takeover: %+v", r)
	}
}

func TestPoolExhausted(t *testing.T) {
	pool := poolWith(t, 1)
	ctx := context.Background()
	var runs atomic.Int64
	fn := func(context.Context) (string, error) { runs.Add(1); return "ran", nil }

	t.Run("acquire timeout", func(t *testing.T) {
		s := newStore(t, pool, WithAcquireTimeout(100*time.Millisecond))
		g := idem.NewGuard(s)
		hold, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = call(ctx, g, &spec, "k", fn)
		hold.Release()
		if !errors.Is(err, idem.ErrStoreUnavailable) || !errors.Is(err, ErrPoolExhausted) {
			t.Fatalf("claim with the pool exhausted: %v, want ErrStoreUnavailable wrapping ErrPoolExhausted", err)
		}
		if runs.Load() != 0 {
			t.Fatal("the function ran without a claim")
		}
		if v, err := call(ctx, g, &spec, "k", fn); err != nil || v != "ran" || runs.Load() != 1 {
			t.Fatalf("after the pool freed up: %q %v", v, err)
		}
	})
	// The acquire's bound on a ctx with a Done channel and no deadline
	// (acquire.go: WithCancel ended by the shared limit) and on one whose
	// deadline is past the bound.
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"cancelable", func() (context.Context, context.CancelFunc) { return context.WithCancel(ctx) }},
		{"later deadline", func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, time.Minute) }},
	} {
		t.Run("acquire timeout, "+tc.name+" ctx", func(t *testing.T) {
			s := newStore(t, pool, WithAcquireTimeout(100*time.Millisecond))
			hold, err := pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer hold.Release()
			cctx, cancel := tc.ctx()
			defer cancel()
			start := time.Now()
			_, err = s.Claim(cctx, idemstore.ClaimRequest{Key: "k", Owner: token(1), Fingerprint: fingerprint(1), Lease: time.Second, TTL: time.Hour})
			if !errors.Is(err, ErrPoolExhausted) {
				t.Fatalf("claim: %v, want ErrPoolExhausted", err)
			}
			if el := time.Since(start); el < 87*time.Millisecond || el > 5*time.Second {
				t.Fatalf("claim failed after %v, want 7/8 to all of the 100ms acquire timeout", el)
			}
		})
	}
	t.Run("caller deadline", func(t *testing.T) {
		s := newStore(t, pool, WithAcquireTimeout(0))
		hold, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer hold.Release()
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_, err = s.Claim(cctx, idemstore.ClaimRequest{Key: "k", Owner: token(1), Fingerprint: fingerprint(1), Lease: time.Second, TTL: time.Hour})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("claim: %v, want DeadlineExceeded", err)
		}
	})
}

// business sets up an accounts table next to the store's records.
func business(t *testing.T, s *Store) string {
	t.Helper()
	table := pgx.Identifier{s.n.schema, "accounts"}.Sanitize()
	_, err := s.pool.Exec(context.Background(), fmt.Sprintf(`CREATE TABLE %[1]s (id int PRIMARY KEY, balance int NOT NULL, last_fence bigint NOT NULL DEFAULT 0);
		INSERT INTO %[1]s (id, balance) VALUES (1, 100)`, table))
	if err != nil {
		t.Fatal(err)
	}
	return table
}

// countedInTx is a call's function that runs body in InTx with opts and
// counts body's runs in *attempts: InTx runs it again after a
// serialization failure.
func countedInTx(s *Store, opts pgx.TxOptions, attempts *int, body func(context.Context, pgx.Tx) (string, error)) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		return InTx(ctx, s, opts, func(ctx context.Context, tx pgx.Tx) (string, error) {
			*attempts++
			return body(ctx, tx)
		})
	}
}

func balance(t *testing.T, s *Store, table string) int {
	t.Helper()
	var b int
	if err := s.pool.QueryRow(context.Background(), "SELECT balance FROM "+table+" WHERE id = 1").Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

// onlyRecord is the record of the one key s holds, whatever the Guard
// derived it as.
func onlyRecord(t *testing.T, s *Store) idemstore.Record {
	t.Helper()
	var k string
	if err := s.pool.QueryRow(context.Background(), "SELECT key FROM "+s.Table()).Scan(&k); err != nil {
		t.Fatal(err)
	}
	return getRecord(t, s, k)
}

// TestInTx covers transactional completion through a Guard.
func TestInTx(t *testing.T) {
	pool := poolWith(t, 6)
	ctx := context.Background()
	rr := pgx.TxOptions{IsoLevel: pgx.RepeatableRead}

	t.Run("commits together and the guard's complete is recognised", func(t *testing.T) {
		s := newStore(t, pool)
		acct := business(t, s)
		var events []idem.Outcome
		g := idem.NewGuard(s, idem.WithObserver(idem.ObserverFunc(func(e idem.Event) { events = append(events, e.Outcome) })))
		var runs int
		fn := func(ctx context.Context) (string, error) {
			return InTx(ctx, s, rr, func(ctx context.Context, tx pgx.Tx) (string, error) {
				runs++
				fence, _ := idem.FenceFrom(ctx)
				_, err := tx.Exec(ctx, "UPDATE "+acct+" SET balance = balance - 10, last_fence = $1 WHERE id = 1", fence)
				// A heartbeat after the transaction's completion is the
				// owner finishing, not losing its lease.
				return "charged", err
			})
		}
		for range 3 {
			if v, err := call(ctx, g, &spec, "pay-1", fn); err != nil || v != "charged" {
				t.Fatalf("%q %v", v, err)
			}
		}
		if runs != 1 || balance(t, s, acct) != 90 {
			t.Fatalf("runs %d, balance %d: want one charge", runs, balance(t, s, acct))
		}
		if events[0] != idem.OutcomeExecuted || events[1] != idem.OutcomeReplayed {
			t.Fatalf("outcomes %v, want executed then replayed", events)
		}
	})

	t.Run("a Spec's own codec writes the record in the transaction", func(t *testing.T) {
		s := newStore(t, pool)
		g := idem.NewGuard(s)
		strCodec := idemimpl.TypedCodec[string]{
			Encode: func(e *idemimpl.Encoder, v *string) { e.String(*v) },
			Decode: func(d *idemimpl.Decoder, v *string) { *v = d.String() },
		}
		own := idem.Spec{Name: "pgstore.test.OwnCodec", Codec: strCodec}
		var key string
		var runs int
		fn := func(ctx context.Context) (string, error) {
			l, _, _ := idem.LeaseFrom(ctx)
			key = l.Key
			return InTx(ctx, s, rr, func(ctx context.Context, tx pgx.Tx) (string, error) { runs++; return "charged", nil })
		}
		for range 2 {
			// With the Guard's codec in CompleteInTx the Guard's own
			// Complete would see other bytes: ErrTxResultMismatch.
			if v, err := call(ctx, g, &own, "k", fn); err != nil || v != "charged" {
				t.Fatalf("%q %v", v, err)
			}
		}
		rec, err := s.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		_, body, _, err := idemimpl.SplitRecord(rec.Result)
		if err != nil || runs != 1 || len(body) == 0 || body[0] != idemimpl.CodecMarker {
			t.Fatalf("runs %d, record %q: want one run and the Spec codec's record", runs, rec.Result)
		}
	})

	t.Run("heartbeat, release and complete after CompleteInTx", func(t *testing.T) {
		s := newStore(t, pool)
		g := idem.NewGuard(s)
		var hb, rel, same, other error
		_, err := call(ctx, g, &spec, "k", func(ctx context.Context) (string, error) {
			v, err := InTx(ctx, s, pgx.TxOptions{}, func(context.Context, pgx.Tx) (string, error) { return "v", nil })
			l, _, _ := idem.LeaseFrom(ctx)
			_, c, _ := idem.LeaseFrom(ctx) // the bytes the Guard writes: identity header, then JSON
			vb, _ := c.Marshal("v")
			wb, _ := c.Marshal("w")
			hb = s.Heartbeat(ctx, l)
			rel = s.Release(ctx, l)
			same = s.Complete(ctx, l, idemstore.Result{Data: vb})
			other = s.Complete(ctx, l, idemstore.Result{Data: wb})
			return v, err
		})
		if err != nil || hb != nil || !errors.Is(rel, idem.ErrLeaseLost) || same != nil || !errors.Is(other, ErrTxResultMismatch) {
			t.Fatalf("do %v; heartbeat %v (want nil); release %v (want lease lost); complete same %v (want nil); other %v (want mismatch)",
				err, hb, rel, same, other)
		}
	})

	t.Run("heartbeat blocked by the transaction sees the completion", func(t *testing.T) {
		s := newStore(t, pool)
		g := idem.NewGuard(s)
		var hb error
		_, err := call(ctx, g, &spec, "k", func(ctx context.Context) (string, error) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				return "", err
			}
			defer tx.Rollback(ctx) //nolint:errcheck
			if err := s.CompleteInTx(ctx, tx, "v"); err != nil {
				return "", err
			}
			l, _, _ := idem.LeaseFrom(ctx)
			hbc := make(chan error, 1)
			go func() { hbc <- s.Heartbeat(context.WithoutCancel(ctx), l) }() // waits on the row lock
			time.Sleep(50 * time.Millisecond)
			if err := tx.Commit(ctx); err != nil {
				return "", err
			}
			hb = <-hbc
			return "v", nil
		})
		if err != nil || hb != nil {
			t.Fatalf("do %v, heartbeat racing the commit %v: want both nil", err, hb)
		}
	})

	t.Run("error rolls back business write and releases", func(t *testing.T) {
		s := newStore(t, pool)
		acct := business(t, s)
		g := idem.NewGuard(s)
		boom := errors.New("card declined")
		fn := func(ctx context.Context) (string, error) {
			return InTx(ctx, s, rr, func(ctx context.Context, tx pgx.Tx) (string, error) {
				if _, err := tx.Exec(ctx, "UPDATE "+acct+" SET balance = balance - 10 WHERE id = 1"); err != nil {
					return "", err
				}
				return "", boom
			})
		}
		if _, err := call(ctx, g, &spec, "k", fn); !errors.Is(err, boom) {
			t.Fatalf("%v, want the function's error", err)
		}
		if b := balance(t, s, acct); b != 100 {
			t.Fatalf("balance %d after a rolled-back call", b)
		}
		if r := onlyRecord(t, s); r.State != idemstore.StateReleased {
			t.Fatalf("record %+v, want released", r)
		}
	})

	t.Run("serialization failure is retried", func(t *testing.T) {
		s := newStore(t, pool)
		acct := business(t, s)
		g := idem.NewGuard(s)
		attempts := 0
		fn := countedInTx(s, rr, &attempts, func(ctx context.Context, tx pgx.Tx) (string, error) {
			var b int
			if err := tx.QueryRow(ctx, "SELECT balance FROM "+acct+" WHERE id = 1").Scan(&b); err != nil {
				return "", err
			}
			if attempts == 1 { // a concurrent writer commits after our snapshot
				if _, err := pool.Exec(ctx, "UPDATE "+acct+" SET balance = balance + 1000 WHERE id = 1"); err != nil {
					return "", err
				}
			}
			_, err := tx.Exec(ctx, "UPDATE "+acct+" SET balance = $1 WHERE id = 1", b-10)
			return fmt.Sprint("paid from ", b), err
		})
		v, err := call(ctx, g, &spec, "k", fn)
		if err != nil || v != "paid from 1100" || attempts != 2 {
			t.Fatalf("%q %v after %d attempts, want success on the second", v, err, attempts)
		}
		if b := balance(t, s, acct); b != 1090 {
			t.Fatalf("balance %d, want 1090 (one debit, the concurrent credit kept)", b)
		}
		if v2, err := call(ctx, g, &spec, "k", fn); v2 != v || err != nil || attempts != 2 {
			t.Fatalf("replay %q %v", v2, err)
		}
	})

	t.Run("retries exhausted leaves neither", func(t *testing.T) {
		s := newStore(t, pool, WithTxRetries(2))
		acct := business(t, s)
		g := idem.NewGuard(s)
		attempts := 0
		fn := countedInTx(s, rr, &attempts, func(ctx context.Context, tx pgx.Tx) (string, error) {
			if _, err := tx.Exec(ctx, "SELECT balance FROM "+acct+" WHERE id = 1"); err != nil {
				return "", err
			}
			if _, err := pool.Exec(ctx, "UPDATE "+acct+" SET balance = balance + 1 WHERE id = 1"); err != nil {
				return "", err
			}
			_, err := tx.Exec(ctx, "UPDATE "+acct+" SET balance = balance - 10 WHERE id = 1")
			return "never", err
		})
		_, err := call(ctx, g, &spec, "k", fn)
		if !IsSerializationFailure(err) || !strings.Contains(err.Error(), "3 attempts") || attempts != 3 {
			t.Fatalf("%v after %d attempts, want a serialization failure after 3", err, attempts)
		}
		if b := balance(t, s, acct); b != 103 {
			t.Fatalf("balance %d, want 103: no debit, three concurrent credits", b)
		}
		if r := onlyRecord(t, s); r.State != idemstore.StateReleased || r.Result != nil {
			t.Fatalf("record %+v, want released without a result", r)
		}
	})

	t.Run("stale owner's transaction rolls back", func(t *testing.T) {
		s := newStore(t, pool)
		acct := business(t, s)
		g := idem.NewGuard(s)
		fn := func(ctx context.Context) (string, error) {
			l, _, _ := idem.LeaseFrom(ctx)
			// Another owner takes the key over (what a claim after lease
			// expiry writes), while this one is still running.
			other := token(7)
			if _, err := pool.Exec(ctx, "UPDATE "+s.Table()+" SET owner = $2, fence = fence + 1 WHERE key = $1", l.Key, other[:]); err != nil {
				return "", err
			}
			return InTx(ctx, s, rr, func(ctx context.Context, tx pgx.Tx) (string, error) {
				_, err := tx.Exec(ctx, "UPDATE "+acct+" SET balance = balance - 10 WHERE id = 1")
				return "stale", err
			})
		}
		if _, err := call(ctx, g, &spec, "k", fn); !errors.Is(err, idem.ErrLeaseLost) {
			t.Fatalf("%v, want ErrLeaseLost", err)
		}
		if b := balance(t, s, acct); b != 100 {
			t.Fatalf("balance %d: the stale owner's write landed", b)
		}
	})

	t.Run("outside a guarded call", func(t *testing.T) {
		s := newStore(t, pool)
		if _, err := InTx(ctx, s, rr, func(context.Context, pgx.Tx) (int, error) { return 1, nil }); !errors.Is(err, ErrNoLease) {
			t.Fatalf("%v, want ErrNoLease", err)
		}
	})
}
