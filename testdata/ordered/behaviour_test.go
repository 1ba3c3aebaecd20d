package ordered

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func TestOrder(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	m := func(id, user string, at time.Time) Measurement {
		return Measurement{EventID: id, UserID: user, Timestamp: at, Value: 1}
	}
	first, err := api.Apply(ctx, m("e1", "u1", t0))
	if err != nil {
		t.Fatal(err)
	}
	// Older than the last accepted: rejected, with both times.
	_, err = api.Apply(ctx, m("e2", "u1", t0.Add(-time.Second)))
	var oerr *idem.OutOfOrderError
	if !errors.Is(err, idem.ErrOutOfOrder) || !errors.As(err, &oerr) {
		t.Fatalf("older event: got %v, want ErrOutOfOrder", err)
	}
	if !oerr.LastAccepted.Equal(t0) || !oerr.Submitted.Equal(t0.Add(-time.Second)) {
		t.Errorf("OutOfOrderError: last %v submitted %v", oerr.LastAccepted, oerr.Submitted)
	}
	// Equal timestamps are accepted; later ones too.
	if _, err := api.Apply(ctx, m("e3", "u1", t0)); err != nil {
		t.Errorf("equal time: %v", err)
	}
	if _, err := api.Apply(ctx, m("e4", "u1", t0.Add(time.Minute))); err != nil {
		t.Errorf("later time: %v", err)
	}
	// A replay of an accepted event is a replay, not an ordering error.
	again, err := api.Apply(ctx, m("e1", "u1", t0))
	if err != nil || again != first {
		t.Errorf("replay after later events: %d, %v; want %d", again, err, first)
	}
	// The rejected event was not recorded: retried in order it runs.
	if _, err := api.Apply(ctx, m("e2", "u1", t0.Add(2*time.Minute))); err != nil {
		t.Errorf("rejected event resubmitted later: %v", err)
	}
	// Entities are independent.
	if _, err := api.Apply(ctx, m("e5", "u2", t0.Add(-time.Hour))); err != nil {
		t.Errorf("other entity: %v", err)
	}
}

func TestGrace(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	m := func(id string, at time.Time) Measurement { return Measurement{EventID: id, UserID: "u", Timestamp: at} }
	for _, c := range []struct {
		id string
		at time.Time
		ok bool
	}{
		{"a", t0, true},
		{"b", t0.Add(-4 * time.Minute), true},  // late, inside 5m
		{"c", t0.Add(-5 * time.Minute), true},  // exactly the grace
		{"d", t0.Add(-6 * time.Minute), false}, // beyond it
		{"e", t0.Add(time.Minute), true},
		{"f", t0.Add(-4*time.Minute - time.Second), false}, // the window follows the last accepted time (t0+1m)
	} {
		_, err := api.ApplyLate(ctx, m(c.id, c.at))
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, idem.ErrOutOfOrder)) {
			t.Errorf("%s at %v: err %v, want accepted=%v", c.id, c.at.Sub(t0), err, c.ok)
		}
	}
}

func TestOverride(t *testing.T) {
	rec := &idemtest.Recorder{}
	api := NewIdempotent(idem.NewGuard(memstore.New(), idem.WithObserver(rec)))
	ctx := context.Background()
	if _, err := api.Apply(ctx, Measurement{EventID: "new", UserID: "u", Timestamp: t0}); err != nil {
		t.Fatal(err)
	}
	old := Measurement{EventID: "old", UserID: "u", Timestamp: t0.Add(-time.Hour)}
	if _, err := api.Apply(ctx, old); !errors.Is(err, idem.ErrOutOfOrder) {
		t.Fatalf("without override: %v", err)
	}
	if _, err := api.Apply(idem.AllowOutOfOrder(ctx, "backfill ticket 42"), old); err != nil {
		t.Fatalf("with override: %v", err)
	}
	var found bool
	for _, e := range rec.Events() {
		if e.Outcome == idem.OutcomeOverride && e.Reason == "backfill ticket 42" && e.Entity != "" {
			found = true
		}
	}
	if !found {
		t.Errorf("no override event with the reason among %+v", rec.Events())
	}
	// The override did not move the entity's time back.
	if _, err := api.Apply(ctx, Measurement{EventID: "older", UserID: "u", Timestamp: t0.Add(-time.Minute)}); !errors.Is(err, idem.ErrOutOfOrder) {
		t.Errorf("after override: %v, want ErrOutOfOrder", err)
	}
}

func TestPointerTime(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	at := t0
	dev := &Device{Tenant: "t", Serial: 7}
	if err := api.Record(ctx, &Reading{ID: "r1", Device: dev, At: &at}); err != nil {
		t.Fatal(err)
	}
	if err := api.Record(ctx, &Reading{ID: "r2", Device: dev}); !errors.Is(err, idem.ErrInvalidKey) {
		t.Errorf("no time: %v, want ErrInvalidKey", err)
	}
	late := t0.Add(-500 * time.Millisecond)
	if err := api.Record(ctx, &Reading{ID: "r3", Device: dev, At: &late}); err != nil {
		t.Errorf("inside grace=1s: %v", err)
	}
	older := t0.Add(-2 * time.Second)
	if err := api.Record(ctx, &Reading{ID: "r4", Device: dev, At: &older}); !errors.Is(err, idem.ErrOutOfOrder) {
		t.Errorf("beyond grace: %v", err)
	}
	// A nil device is an entity of its own.
	if err := api.Record(ctx, &Reading{ID: "r5", At: &older}); err != nil {
		t.Errorf("nil device: %v", err)
	}
}

// Concurrent events of one entity: whatever the interleaving, the accepted
// times are non-decreasing in the order the functions ran.
func TestConcurrentOrder(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	var mu sync.Mutex
	var accepted []time.Time
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := t0.Add(time.Duration((i*37)%64) * time.Second)
			m := Measurement{EventID: "c" + string(rune('A'+i)), UserID: "u", Timestamp: at}
			if _, err := api.Apply(ctx, m); err == nil {
				mu.Lock()
				accepted = append(accepted, at)
				mu.Unlock()
			} else if !errors.Is(err, idem.ErrOutOfOrder) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if len(accepted) == 0 {
		t.Fatal("nothing accepted")
	}
	// The last accepted time is the maximum: a later claim of an older event fails.
	max := accepted[0]
	for _, a := range accepted {
		if a.After(max) {
			max = a
		}
	}
	_, err := api.Apply(ctx, Measurement{EventID: "probe", UserID: "u", Timestamp: max.Add(-time.Nanosecond)})
	if !errors.Is(err, idem.ErrOutOfOrder) {
		t.Errorf("probe just before the max accepted time: %v", err)
	}
}
