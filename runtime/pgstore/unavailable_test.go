package pgstore

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

// TestConstructorsAgainstARefusedPortAreStoreUnavailable: pgstore.New and
// Migrate over a pool whose server refuses connections fail with an error
// that errors.Is recognises as idem.ErrStoreUnavailable, keeps the network
// cause, and says "store unavailable" once. Before, New returned an
// untyped "reading schema version" error.
func TestConstructorsAgainstARefusedPortAreStoreUnavailable(t *testing.T) {
	pool, _ := refusedPool(t, "?connect_timeout=2")
	tests := []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"New", func(ctx context.Context) error {
			s, err := New(ctx, pool)
			if s != nil {
				s.Close()
			}
			return err
		}},
		{"Migrate", func(ctx context.Context) error { return Migrate(ctx, pool) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := tt.run(ctx)
			if !errors.Is(err, idem.ErrStoreUnavailable) {
				t.Errorf("%s = %v, want an error wrapping idem.ErrStoreUnavailable", tt.name, err)
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("%s = %v, want the cause (connection refused) kept", tt.name, err)
			}
			if err != nil && strings.Count(err.Error(), "unavailable") != 1 {
				t.Errorf("%s = %q, want \"unavailable\" said once", tt.name, err)
			}
		})
	}
}

// TestDeadlineShorterThanAStatementBoundsEveryStoreCall: a statement that
// the server does not answer (it waits on a row lock held elsewhere) does
// not hold a call past its ctx: with a 60ms deadline each call returns
// within a small bound with an error wrapping context.DeadlineExceeded
// (pgx cancels the query and closes or resets the connection itself).
func TestDeadlineShorterThanAStatementBoundsEveryStoreCall(t *testing.T) {
	s := newStore(t, newPool(t, nil))
	ctx := context.Background()
	const key = "held"
	res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{1}, Lease: time.Minute, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	l := idemstore.Lease{Key: key, Owner: idemstore.Token{1}, Fence: res.Fence, Duration: time.Minute, TTL: time.Hour}
	// A claim of a live row is answered from its snapshot without the row
	// lock; a released row is one the claim must lock to take, so the
	// claim is made on one of those.
	const released = "held-released"
	rres, err := s.Claim(ctx, idemstore.ClaimRequest{Key: released, Owner: idemstore.Token{3}, Lease: time.Minute, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, idemstore.Lease{Key: released, Owner: idemstore.Token{3}, Fence: rres.Fence, Duration: time.Minute, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	unlock := lockRow(t, s, key)
	defer unlock()
	unlockReleased := lockRow(t, s, released)
	defer unlockReleased()
	ops := []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"claim", func(ctx context.Context) error {
			_, err := s.Claim(ctx, idemstore.ClaimRequest{Key: released, Owner: idemstore.Token{2}, Lease: time.Minute, TTL: time.Hour})
			return err
		}},
		{"heartbeat", func(ctx context.Context) error { return s.Heartbeat(ctx, l) }},
		{"complete", func(ctx context.Context) error { return s.Complete(ctx, l, idemstore.Result{Data: []byte("1")}) }},
		{"release", func(ctx context.Context) error { return s.Release(ctx, l) }},
		{"delete", func(ctx context.Context) error { return s.Delete(ctx, key) }},
		{"force release", func(ctx context.Context) error { _, err := s.ForceRelease(ctx, key); return err }},
	}
	type outcome struct{ Deadline, InBound bool }
	got, want := map[string]outcome{}, map[string]outcome{}
	for _, op := range ops {
		dctx, cancel := context.WithTimeout(ctx, 60*time.Millisecond)
		start := time.Now()
		err := op.run(dctx)
		took := time.Since(start)
		cancel()
		got[op.name] = outcome{errors.Is(err, context.DeadlineExceeded), took < 400*time.Millisecond}
		want[op.name] = outcome{true, true}
		if got[op.name] != want[op.name] {
			t.Logf("%s: %v after %v", op.name, err, took)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls with a 60ms deadline on a row the server holds (-want +got):\n%s", diff)
	}
}

// TestNewFailsFast: New over a refused port returns well inside a short
// ctx, with idem.ErrStoreUnavailable, the cause, and no phrase said twice.
func TestNewFailsFast(t *testing.T) {
	pool, addr := refusedPool(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	_, err := New(ctx, pool)
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("New took %v to fail", took)
	}
	if !errors.Is(err, idem.ErrStoreUnavailable) || !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), addr) {
		t.Errorf("New = %v; want idem.ErrStoreUnavailable, connection refused and the address", err)
	}
	if p := testenv.RepeatedPhrase(err.Error(), 3); p != "" {
		t.Errorf("New = %q says %q twice", err, p)
	}
}

// TestUnavailableErrorsSayItOnce: every operation of a store whose server
// refuses connections, and a Guard's call over it, fails with an error
// wrapping idem.ErrStoreUnavailable whose text repeats no phrase.
func TestUnavailableErrorsSayItOnce(t *testing.T) {
	pool, _ := refusedPool(t, "")
	// New would refuse the pool: the store as New builds it past its checks.
	cfg := buildConfig([]Option{WithPollInterval(50 * time.Millisecond)})
	s := &Store{pool: pool, cfg: cfg, n: newNames(cfg.schema, cfg.table)}
	s.q = buildQueries(s.n)
	bg, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.lis = newListener(s, bg)
	t.Cleanup(func() { s.Close() })
	idemtest.Unavailable(t, s, true)
}
