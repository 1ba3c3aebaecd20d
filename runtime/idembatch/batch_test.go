package idembatch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idembatch"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/memstore"
)

type measurement struct {
	User  string
	Event string
	At    time.Duration // after t0
	Value int
}

func TestApplyBatch(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	boom := errors.New("sensor offline")
	run := func(t *testing.T, opts []idembatch.Option, items []measurement) []string {
		g := idem.NewGuard(memstore.New())
		spec := &idem.Spec{Name: "test.Record", Ordered: true, OnDuplicate: idem.DuplicateReturn}
		apply := func(ctx context.Context, m measurement) error {
			c, k := idemimpl.Begin(g, spec)
			k.Key().ID(m.Event)
			k.Entity().String(m.User)
			k.At(t0.Add(m.At))
			_, err := idem.Do(ctx, c, func(ctx context.Context) (int, error) {
				if m.Value < 0 {
					return 0, boom
				}
				return m.Value, nil
			})
			return err
		}
		// The first event of u1 was applied in an earlier batch.
		if err := apply(context.Background(), measurement{"u1", "e0", 0, 1}); err != nil {
			t.Fatal(err)
		}
		res := idembatch.Apply(context.Background(), items,
			func(m measurement) string { return m.User },
			func(m measurement) time.Time { return t0.Add(m.At) }, apply, opts...)
		var got []string
		for _, r := range res {
			got = append(got, r.Status.String())
		}
		return got
	}
	items := []measurement{
		{"u1", "e3", 30 * time.Minute, 3},
		{"u1", "e0", 0, 1}, // applied in the earlier batch: replayed
		{"u2", "f1", 5 * time.Minute, 1},
		{"u1", "e2", 20 * time.Minute, 2}, // sorted before e3
		{"u2", "f2", 1 * time.Minute, -1}, // sorted first for u2; fails
		{"u1", "e3", 30 * time.Minute, 3}, // duplicate inside the batch: replayed
		{"u2", "f3", 10 * time.Minute, 1},
	}
	tests := []struct {
		name  string
		opts  []idembatch.Option
		items []measurement
		want  []string
	}{
		{"mixed ordering and duplicates", nil, items,
			[]string{"applied", "replayed", "applied", "applied", "failed", "replayed", "applied"}},
		{"violation stops the entity", nil, []measurement{
			{"u1", "late", -time.Hour, 1}, // older than e0 beyond grace
			{"u1", "next", time.Hour, 1},  // sorted after "late": skipped
			{"u3", "other", 0, 1},
		}, []string{"out_of_order", "skipped", "applied"}},
		{"continue after a violation", []idembatch.Option{idembatch.WithContinueAfterOutOfOrder()}, []measurement{
			{"u1", "late", -time.Hour, 1},
			{"u1", "next", time.Hour, 1},
		}, []string{"out_of_order", "applied"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, run(t, tt.opts, tt.items)); diff != "" {
				t.Fatalf("statuses (-want +got):\n%s", diff)
			}
		})
	}
}
