package idem_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// noOrdering hides the memory store's ordering support.
type noOrdering struct{ idemstore.Store }

func TestOrderedCalls(t *testing.T) {
	rec := &idemtest.Recorder{}
	g := idem.NewGuard(memstore.New(), idem.WithObserver(rec))
	spec := &idem.Spec{Name: "test.Measure", Ordered: true, Grace: time.Minute}
	t0 := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	apply := func(ctx context.Context, user, event string, at time.Time) (string, error) {
		c, k := idemimpl.Begin(g, spec)
		k.Key().ID(event)
		k.Entity().String(user)
		k.At(at)
		return idem.Do(ctx, c, func(ctx context.Context) (string, error) { return event, nil })
	}
	steps := []struct {
		user, event string
		at          time.Duration
		wantErr     error
	}{
		{"u1", "e1", 0, nil},
		{"u1", "e2", 10 * time.Minute, nil},
		{"u1", "e3", 9*time.Minute + 30*time.Second, nil}, // within grace
		{"u1", "e4", 5 * time.Minute, idem.ErrOutOfOrder},
		{"u2", "e5", 0, nil},                // another entity has its own clock
		{"u1", "e1", 0, nil},                // a replay stays a replay
		{"u1", "e6", 10 * time.Minute, nil}, // equal time is accepted
	}
	for _, s := range steps {
		v, err := apply(context.Background(), s.user, s.event, t0.Add(s.at))
		if !errors.Is(err, s.wantErr) {
			t.Fatalf("%s/%s: err = %v, want %v", s.user, s.event, err, s.wantErr)
		}
		if err == nil && v != s.event {
			t.Fatalf("%s/%s: got %q", s.user, s.event, v)
		}
		var ooe *idem.OutOfOrderError
		if errors.As(err, &ooe) {
			want := idem.OutOfOrderError{Func: "test.Measure", LastAccepted: t0.Add(10 * time.Minute), Submitted: t0.Add(5 * time.Minute), Grace: time.Minute}
			if diff := cmp.Diff(want, *ooe); diff != "" {
				t.Fatalf("OutOfOrderError (-want +got):\n%s", diff)
			}
		}
	}
	ctx := idem.AllowOutOfOrder(context.Background(), "backfill approved by ops")
	if _, err := apply(ctx, "u1", "e4", t0.Add(5*time.Minute)); err != nil {
		t.Fatalf("override: %v", err)
	}
	var override *idem.Event
	events := rec.Events()
	for i, e := range events {
		if e.Outcome == idem.OutcomeOverride {
			override = &events[i]
		}
	}
	if override == nil || override.Reason != "backfill approved by ops" || !strings.Contains(override.Entity, "{") {
		t.Fatalf("override event = %+v", override)
	}
	if got := rec.Outcomes(); !slicesContain(got, "out_of_order") {
		t.Fatalf("outcomes %v lack out_of_order", got)
	}

	g2 := idem.NewGuard(noOrdering{memstore.New()})
	c, k := idemimpl.Begin(g2, spec)
	k.Key().ID("e1")
	k.Entity().String("u1")
	k.At(t0)
	if _, err := idem.Do(context.Background(), c, func(ctx context.Context) (int, error) { return 1, nil }); err == nil || !strings.Contains(err.Error(), "does not support ordering") {
		t.Fatalf("ordered call on a store without ordering = %v", err)
	}
}
