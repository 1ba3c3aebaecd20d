package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

// TestCallerDeadlineNoticedByTheClientFirst: with ContextTimeoutEnabled,
// go-redis's socket deadline is the ctx's deadline and can fire before
// the ctx's timer does. Every store call whose client timed out at the
// caller's deadline says context.DeadlineExceeded, never
// idem.ErrStoreUnavailable (which a fail-open Guard would run through),
// while a ctx whose deadline is far off is not touched by the rule.
func TestCallerDeadlineNoticedByTheClientFirst(t *testing.T) {
	rdb := standalone(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true; o.MaxRetries = -1 })
	s := newStore(t, rdb)
	ctx := context.Background()
	if _, err := s.Get(ctx, "warm"); !errors.Is(err, idem.ErrNotFound) { // the eviction check, with a live ctx
		t.Fatal(err)
	}
	l := idem.Lease{Key: "k", Owner: idem.Token{1}, Fence: 1, Duration: time.Second, TTL: time.Minute}
	ops := []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"claim", func(ctx context.Context) error {
			_, err := s.Claim(ctx, idem.ClaimRequest{Key: "k", Owner: idem.Token{1}, Lease: time.Second, TTL: time.Minute})
			return err
		}},
		{"get", func(ctx context.Context) error { _, err := s.Get(ctx, "k"); return err }},
		{"heartbeat", func(ctx context.Context) error { return s.Heartbeat(ctx, l) }},
		{"complete", func(ctx context.Context) error { return s.Complete(ctx, l, idem.Result{Data: []byte("1")}) }},
		{"step", func(ctx context.Context) error { return s.SaveStep(ctx, l, "a", []byte("1")) }},
		{"release", func(ctx context.Context) error { return s.Release(ctx, l) }},
		{"delete", func(ctx context.Context) error { return s.Delete(ctx, "k") }},
	}
	type outcome struct{ Deadline, Unavailable bool }
	got, want := map[string]outcome{}, map[string]outcome{}
	for _, op := range ops {
		for _, ahead := range []time.Duration{-time.Millisecond, 0} {
			err := op.run(idemtest.DueCtx(ctx, time.Now().Add(ahead)))
			name := op.name + "/" + ahead.String()
			got[name] = outcome{errors.Is(err, context.DeadlineExceeded), errors.Is(err, idem.ErrStoreUnavailable)}
			want[name] = outcome{Deadline: true}
			if got[name] != want[name] {
				t.Logf("%s: %v", name, err)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls at the instant of their deadline (-want +got):\n%s", diff)
	}
}

// TestCallerDeadlineAgainstSlowRedis: calls with a short deadline against
// a Redis slower than it (a proxy that holds every reply), with
// ContextTimeoutEnabled and no retries, say context.DeadlineExceeded every
// time and never idem.ErrStoreUnavailable, whichever of the socket
// deadline and the ctx's timer fires first. Before, 11 to 14 of 30 calls
// said the store was unavailable.
func TestCallerDeadlineAgainstSlowRedis(t *testing.T) {
	standalone(t) // skips (or fails under CI) without Redis
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"pipelined", nil},
		{"not pipelined", []Option{WithPipelining(false)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newFaultProxy(t, testenv.RedisAddr())
			rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
			t.Cleanup(func() { rdb.Close() })
			s := newStore(t, rdb, tc.opts...)
			ctx := context.Background()
			if _, err := s.Get(ctx, "warm"); !errors.Is(err, idem.ErrNotFound) {
				t.Fatal(err)
			}
			p.SetLatency(100 * time.Millisecond)
			const runs = 30
			type counts struct{ Deadline, Unavailable int }
			var got counts
			for i := range runs {
				dctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
				_, err := s.Get(dctx, "slow")
				cancel()
				if errors.Is(err, context.DeadlineExceeded) {
					got.Deadline++
				}
				if errors.Is(err, idem.ErrStoreUnavailable) {
					got.Unavailable++
					t.Logf("run %d: %v", i, err)
				}
			}
			if diff := cmp.Diff(counts{Deadline: runs}, got); diff != "" {
				t.Errorf("%d calls with a 10ms deadline against a 100ms Redis (-want +got):\n%s", runs, diff)
			}
		})
	}
}
