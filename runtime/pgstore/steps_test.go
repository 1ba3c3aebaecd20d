package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

// stepColumns reads key's step columns.
func stepColumns(t *testing.T, s *Store, key string) (names []string, data []string) {
	t.Helper()
	var n, d [][]byte
	if err := s.pool.QueryRow(context.Background(), "SELECT step_names, step_data FROM "+s.Table()+" WHERE key = $1", key).Scan(&n, &d); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		names = append(names, string(n[i]))
		data = append(data, string(d[i]))
	}
	return names, data
}

// TestStepsRow: a call's steps are two array columns of its row, in the
// order recorded; a heartbeat, a release and ForceRelease keep them, a
// completion clears them; a claim that resumes the row returns them in
// its one statement, ordered (the <table>_claim_ordered_v5 function) or
// not; a claim that makes the row anew (past its retention) clears them.
func TestStepsRow(t *testing.T) {
	qc := &queryCounter{}
	s, clock := tracedStore(t, qc)
	ctx := context.Background()
	for _, ordered := range []bool{false, true} {
		t.Run(fmt.Sprint("ordered=", ordered), func(t *testing.T) {
			key := fmt.Sprint("app.F:v0:{e1}:", ordered)
			n := byte(0)
			claim := func(want idemstore.ClaimStatus) (idemstore.Lease, idemstore.ClaimResult) {
				t.Helper()
				n++
				l := idemstore.Lease{Key: key, Owner: token(n), Duration: time.Minute, TTL: time.Hour}
				req := idemstore.ClaimRequest{Key: key, Owner: l.Owner, Fingerprint: fingerprint(1), Lease: l.Duration, TTL: l.TTL}
				if ordered {
					req.Order = idemstore.OrderClaim{Key: "app.F:v0:{e1}", At: clock.Now()}
				}
				before := qc.n.Load()
				res, err := s.Claim(ctx, req)
				if err != nil || res.Status != want {
					t.Fatalf("claim = %+v, %v; want %v", res, err, want)
				}
				if got := qc.n.Load() - before; got != 1 {
					t.Fatalf("claim ran %d statements, want 1", got)
				}
				l.Fence = res.Fence
				return l, res
			}
			want := map[string][]byte{"charge": []byte("ch_1"), "email": {}, "a\x00b": []byte("\x00\xff")}
			l, _ := claim(idemstore.ClaimAcquired)
			for _, name := range []string{"charge", "email", "a\x00b"} {
				if err := s.SaveStep(ctx, l, name, want[name]); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.SaveStep(ctx, l, "charge", []byte("again")); err != nil {
				t.Fatal(err)
			}
			wantCols := func(when string, names, data []string) {
				t.Helper()
				gn, gd := stepColumns(t, s, key)
				if diff := cmp.Diff([][]string{names, data}, [][]string{gn, gd}); diff != "" {
					t.Fatalf("%s: step columns (-want +got):\n%s", when, diff)
				}
			}
			recorded := func(when string) {
				t.Helper()
				wantCols(when, []string{"charge", "email", "a\x00b"}, []string{"ch_1", "", "\x00\xff"})
			}
			recorded("after SaveStep")
			if err := s.Heartbeat(ctx, l); err != nil {
				t.Fatal(err)
			}
			recorded("after Heartbeat")
			if err := s.Release(ctx, l); err != nil {
				t.Fatal(err)
			}
			recorded("after Release")
			_, res := claim(idemstore.ClaimAcquired)
			if diff := cmp.Diff(want, res.Steps); diff != "" {
				t.Fatalf("steps of the claim after release (-want +got):\n%s", diff)
			}
			clock.Advance(2 * time.Minute) // past the lease
			_, res = claim(idemstore.ClaimTakenOver)
			if diff := cmp.Diff(want, res.Steps); diff != "" {
				t.Fatalf("steps of the takeover (-want +got):\n%s", diff)
			}
			if _, err := s.ForceRelease(ctx, key); err != nil {
				t.Fatal(err)
			}
			recorded("after ForceRelease")
			l, res = claim(idemstore.ClaimAcquired)
			if len(res.Steps) != 3 {
				t.Fatalf("steps of the claim after ForceRelease: %q", res.Steps)
			}
			if err := s.Complete(ctx, l, idemstore.Result{Data: []byte("done")}); err != nil {
				t.Fatal(err)
			}
			wantCols("after Complete", nil, nil)
			if err := s.Delete(ctx, key); err != nil {
				t.Fatal(err)
			}
			l, _ = claim(idemstore.ClaimAcquired)
			if err := s.SaveStep(ctx, l, "charge", []byte("ch_1")); err != nil {
				t.Fatal(err)
			}
			clock.Advance(2*time.Minute + time.Hour) // past the retention: the row stays until cleanup
			if _, res := claim(idemstore.ClaimAcquired); len(res.Steps) != 0 {
				t.Fatalf("a claim of a row past its retention returned steps %q", res.Steps)
			}
			wantCols("after a claim anew", nil, nil)
		})
	}
}

// TestStepTooLarge: a step that would make the call's steps larger than
// the store keeps is refused with idem.ErrResultTooLarge, whether its own
// size tells or the steps already recorded do, and changes nothing.
func TestStepTooLarge(t *testing.T) {
	s := newStore(t, nil)
	s.maxStep = 1000
	l := idemtest.CheckStepTooLarge(t, s, "big", token(1), "1002 bytes")
	if names, _ := stepColumns(t, s, l.Key); len(names) != 1 {
		t.Fatalf("steps %q, want only a", names)
	}
}

// TestStepRacesTakeover: a step saved while another owner takes the key
// over either lands before the takeover, which then returns it, or is
// refused with ErrLeaseLost: never recorded and lost.
func TestStepRacesTakeover(t *testing.T) {
	s := newStore(t, nil)
	ctx := context.Background()
	for i := range 40 {
		key := fmt.Sprint("race-", i)
		l := idemstore.Lease{Key: key, Owner: token(1), Duration: 20 * time.Millisecond, TTL: time.Hour}
		res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: l.Owner, Lease: l.Duration, TTL: l.TTL})
		if err != nil {
			t.Fatal(err)
		}
		l.Fence = res.Fence
		time.Sleep(l.Duration + time.Millisecond)
		var wg sync.WaitGroup
		var saveErr error
		var took idemstore.ClaimResult
		var claimErr error
		wg.Add(2)
		go func() { defer wg.Done(); saveErr = s.SaveStep(ctx, l, "charge", []byte("ch")) }()
		go func() {
			defer wg.Done()
			took, claimErr = s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: token(2), Lease: time.Minute, TTL: time.Hour})
		}()
		wg.Wait()
		if claimErr != nil || took.Status != idemstore.ClaimTakenOver {
			t.Fatalf("takeover = %+v, %v", took, claimErr)
		}
		switch {
		case saveErr == nil && string(took.Steps["charge"]) != "ch":
			t.Fatalf("run %d: the step was saved but the takeover returned %q", i, took.Steps)
		case saveErr != nil && !errors.Is(saveErr, idem.ErrLeaseLost):
			t.Fatalf("run %d: SaveStep = %v", i, saveErr)
		}
	}
}

// TestStepInTx: StepInTx commits a step's business write and its record
// together. A call that dies after the step resumes without running it
// (its write is there once); a step whose fn fails leaves neither; a
// stale owner's step is refused and its write rolled back.
func TestStepInTx(t *testing.T) {
	s := newStore(t, nil)
	ctx := context.Background()
	ledger := pgx.Identifier{s.n.schema, "ledger"}.Sanitize()
	if _, err := s.pool.Exec(ctx, "CREATE TABLE "+ledger+" (id text PRIMARY KEY, step text)"); err != nil {
		t.Fatal(err)
	}
	count := func(id string) (n int) {
		t.Helper()
		if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM "+ledger+" WHERE id = $1", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	spec := &idem.Spec{Name: "steps.tx", Lease: 2 * time.Second, TTL: time.Hour}
	var ran atomic.Int32
	crash := errors.New("crash")
	debit := func(ctx context.Context, id string) (string, error) {
		return StepInTx(ctx, s, pgx.TxOptions{}, "debit", func(ctx context.Context, tx pgx.Tx) (string, error) {
			ran.Add(1)
			_, err := tx.Exec(ctx, "INSERT INTO "+ledger+" VALUES ($1, 'debit')", id)
			return "db_" + id, err
		})
	}
	call := func(g *idem.Guard, id string, fn func(ctx context.Context) (string, error)) (string, error) {
		c := g.Begin(spec, id)
		return idem.Do(ctx, c, fn)
	}

	t.Run("resumes", func(t *testing.T) {
		g := idem.NewGuard(s)
		func() {
			defer func() {
				if p := recover(); p != crash {
					t.Fatalf("recovered %v, want the crash", p)
				}
			}()
			_, _ = call(g, "o1", func(ctx context.Context) (string, error) {
				if _, err := debit(ctx, "o1"); err != nil {
					return "", err
				}
				panic(crash)
			})
		}()
		if count("o1") != 1 {
			t.Fatal("the step's write did not commit")
		}
		got, err := call(g, "o1", func(ctx context.Context) (string, error) { return debit(ctx, "o1") })
		if err != nil || got != "db_o1" || ran.Load() != 1 || count("o1") != 1 {
			t.Fatalf("resumed call = %q, %v; step ran %d times, ledger rows %d", got, err, ran.Load(), count("o1"))
		}
	})

	t.Run("fn fails", func(t *testing.T) {
		g := idem.NewGuard(s)
		boom := errors.New("boom")
		_, err := call(g, "o2", func(ctx context.Context) (string, error) {
			return StepInTx(ctx, s, pgx.TxOptions{}, "debit", func(ctx context.Context, tx pgx.Tx) (string, error) {
				if _, err := tx.Exec(ctx, "INSERT INTO "+ledger+" VALUES ('o2', 'debit')"); err != nil {
					return "", err
				}
				return "", boom
			})
		})
		if !errors.Is(err, boom) || count("o2") != 0 {
			t.Fatalf("call = %v with %d ledger rows, want boom and none", err, count("o2"))
		}
		var n int
		if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM "+s.Table()+" WHERE step_names IS NOT NULL").Scan(&n); err != nil || n != 0 {
			t.Fatalf("%d rows with steps (%v), want none", n, err)
		}
	})

	t.Run("stale owner", func(t *testing.T) {
		ran.Store(0)
		// The first owner's heartbeats are lost: it runs past its lease.
		stale := idem.NewGuard(lostHeartbeats{s})
		paused, resume := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			_, err := call(stale, "o3", func(ctx context.Context) (string, error) {
				close(paused)
				<-resume
				return debit(ctx, "o3-stale")
			})
			done <- err
		}()
		<-paused
		time.Sleep(spec.Lease + 200*time.Millisecond)
		got, err := call(idem.NewGuard(s), "o3", func(ctx context.Context) (string, error) { return debit(ctx, "o3") })
		if err != nil || got != "db_o3" {
			t.Fatalf("successor = %q, %v", got, err)
		}
		close(resume)
		if err := <-done; !errors.Is(err, idem.ErrLeaseLost) {
			t.Fatalf("stale owner's call = %v, want ErrLeaseLost", err)
		}
		if count("o3") != 1 || count("o3-stale") != 0 {
			t.Fatalf("ledger rows: successor %d, stale owner %d; want 1 and 0 (rolled back)", count("o3"), count("o3-stale"))
		}
	})
}

// lostHeartbeats is the store whose heartbeats are lost on the way (and
// reported done): its owner keeps running past its lease.
type lostHeartbeats struct{ *Store }

func (lostHeartbeats) Heartbeat(context.Context, idemstore.Lease) error { return nil }
