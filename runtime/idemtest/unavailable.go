package idemtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Unavailable checks a store whose backend cannot be reached (a refused
// port, a directory that is gone): every Store operation, every Admin
// operation when s has them, an ordered claim when ordered is true, and a
// Guard's call over s in return and wait mode each fail with an error
// wrapping idem.ErrStoreUnavailable, within 5 seconds, whose text says no
// phrase of three or more words twice (it once read "store unavailable:
// … store unavailable").
func Unavailable(t *testing.T, s idemstore.Store, ordered bool) {
	t.Helper()
	l := idemstore.Lease{Key: "k", Owner: idemstore.Token{1}, Fence: 1, Duration: time.Second, TTL: time.Minute}
	g := idem.NewGuard(s)
	guard := func(mode idem.OnDuplicate) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			c := g.Begin(&idem.Spec{Name: "test.Unavailable", OnDuplicate: mode}, "k")
			_, err := idem.Do(ctx, c, func(context.Context) (int, error) { return 1, nil })
			return err
		}
	}
	type op struct {
		name string
		run  func(ctx context.Context) error
	}
	ops := []op{
		{"claim", func(ctx context.Context) error {
			_, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "k", Owner: idemstore.Token{1}, Lease: time.Second, TTL: time.Minute})
			return err
		}},
		{"heartbeat", func(ctx context.Context) error { return s.Heartbeat(ctx, l) }},
		{"complete", func(ctx context.Context) error { return s.Complete(ctx, l, idemstore.Result{Data: []byte("1")}) }},
		{"fail", func(ctx context.Context) error { return s.Fail(ctx, l, idemstore.Result{Data: []byte("1")}) }},
		{"release", func(ctx context.Context) error { return s.Release(ctx, l) }},
		{"get", func(ctx context.Context) error { _, err := s.Get(ctx, "k"); return err }},
		{"delete", func(ctx context.Context) error { return s.Delete(ctx, "k") }},
		{"wait", func(ctx context.Context) error { return s.Wait(ctx, "k") }},
		{"guard", guard(idem.DuplicateReturn)},
		{"guard wait mode", guard(idem.DuplicateWait)},
	}
	if ordered {
		// "{e}" keeps the record and its entity in one Redis Cluster slot.
		ops = append(ops, op{"ordered claim", func(ctx context.Context) error {
			_, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "f:{e}:k", Owner: idemstore.Token{1}, Lease: time.Second, TTL: time.Minute,
				Order: idemstore.OrderClaim{Key: "f:{e}", At: time.Now()}})
			return err
		}})
	}
	if a, ok := s.(idemstore.Admin); ok {
		ops = append(ops,
			op{"list", func(ctx context.Context) error { return a.List(ctx, "", func(idemstore.Record) error { return nil }) }},
			op{"force release", func(ctx context.Context) error { _, err := a.ForceRelease(ctx, "k"); return err }},
			op{"cleanup", func(ctx context.Context) error { _, err := a.Cleanup(ctx); return err }},
		)
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := op.run(ctx)
			if !errors.Is(err, idem.ErrStoreUnavailable) {
				t.Fatalf("%s = %v, want an error wrapping idem.ErrStoreUnavailable", op.name, err)
			}
			if p := testenv.RepeatedPhrase(err.Error(), 3); p != "" {
				t.Errorf("%s = %q: says %q twice", op.name, err, p)
			}
		})
	}
}
