package idemaudit_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemaudit"
	"github.com/idemgen/idemgen/runtime/idembatch"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// apply is what a generated wrapper of
//
//	//idem:key=id order=user:at grace=…
//
// writes, by hand: the key, the entity, the time.
func apply(ctx context.Context, g *idem.Guard, spec *idem.Spec, id, user string, at time.Time, fn func() int) (int, error) {
	c, k := idemimpl.Begin(g, spec)
	k.Key().ID(id)
	k.Entity().String(user)
	k.At(at)
	return idem.Do(ctx, c, func(context.Context) (int, error) { return fn(), nil })
}

// forEachBackend runs test against a fresh env of every backend, in
// parallel.
func forEachBackend(t *testing.T, test func(t *testing.T, e *env)) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			test(t, newEnv(t, b))
		})
	}
}

func TestOrdering(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		spec := &idem.Spec{Name: "audit.Apply", Ordered: true}
		var n atomic.Int64
		run := func(id, user string, at time.Duration) (int, error) {
			return apply(ctx, e.g, spec, id, user, t0.Add(at), func() int { return int(n.Add(1)) })
		}
		first, err := run("e1", "u1", 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = run("e2", "u1", -time.Millisecond)
		var oerr *idem.OutOfOrderError
		if !errors.Is(err, idem.ErrOutOfOrder) || !errors.As(err, &oerr) {
			t.Fatalf("older event: %v, want ErrOutOfOrder", err)
		}
		if !oerr.LastAccepted.Equal(t0) || !oerr.Submitted.Equal(t0.Add(-time.Millisecond)) {
			t.Errorf("error times: last %v submitted %v", oerr.LastAccepted, oerr.Submitted)
		}
		if _, err := run("e3", "u1", 0); err != nil {
			t.Errorf("equal time: %v", err)
		}
		if _, err := run("e4", "u1", time.Hour); err != nil {
			t.Errorf("later: %v", err)
		}
		if v, err := run("e1", "u1", 0); err != nil || v != first {
			t.Errorf("replay after later events: %d, %v; want %d", v, err, first)
		}
		if _, err := run("e5", "u2", -time.Hour); err != nil {
			t.Errorf("other entity: %v", err)
		}

		graced := &idem.Spec{Name: "audit.Graced", Ordered: true, Grace: time.Minute}
		for _, c := range []struct {
			id string
			at time.Duration
			ok bool
		}{
			{"g1", 0, true},
			{"g2", -time.Minute, true},
			{"g3", -time.Minute - time.Millisecond, false},
			{"g4", 10 * time.Second, true},
			{"g5", -50 * time.Second, true},
			{"g6", -51 * time.Second, false},
		} {
			_, err := apply(ctx, e.g, graced, c.id, "u", t0.Add(c.at), func() int { return 0 })
			if c.ok != (err == nil) || (err != nil && !errors.Is(err, idem.ErrOutOfOrder)) {
				t.Errorf("grace 1m, %s at %v: %v, want accepted=%v", c.id, c.at, err, c.ok)
			}
		}

		// The memory trail: one entry per attempt, in order.
		var got []string
		for _, en := range e.mem.all() {
			if en.Func == spec.Name {
				got = append(got, string(en.Action))
			}
		}
		want := []string{"executed", "out_of_order", "executed", "executed", "replayed", "executed"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("audit actions (-want +got):\n%s", diff)
		}
		if e.pg != nil {
			if err := e.pg.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			rows := e.rows(t, "SELECT action FROM %s WHERE func = 'audit.Apply' ORDER BY id")
			if diff := cmp.Diff(want, rows); diff != "" {
				t.Errorf("pgaudit rows (-want +got):\n%s", diff)
			}
		}
	})
}

// Many goroutines submit events with random times for one entity. The
// store's check-and-advance is atomic with the claim, so: (1) if event y
// finished before event x was even submitted, x can only have been
// accepted if it is not older than y (minus grace); (2) afterwards the
// entity's last accepted time is the maximum accepted one (a probe just
// below it is rejected); (3) every rejection names a last accepted time
// that some accepted event had.
func TestConcurrentOrdering(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		const grace = 2 * time.Second
		spec := &idem.Spec{Name: "audit.Race", Ordered: true, Grace: grace}
		type ev struct {
			at               time.Time
			submit, finished int64
			ok               bool
			last             time.Time
		}
		var seq atomic.Int64
		const n = 48
		evs := make([]ev, n)
		var wg sync.WaitGroup
		for i := range n {
			evs[i].at = t0.Add(time.Duration(rand.IntN(60)) * time.Second)
			wg.Add(1)
			go func() {
				defer wg.Done()
				evs[i].submit = seq.Add(1)
				_, err := apply(ctx, e.g, spec, fmt.Sprint("r", i), "hot", evs[i].at, func() int {
					time.Sleep(time.Millisecond) // widen the window between claim and completion
					return i
				})
				evs[i].finished = seq.Add(1)
				var oerr *idem.OutOfOrderError
				switch {
				case err == nil:
					evs[i].ok = true
				case errors.As(err, &oerr):
					evs[i].last = oerr.LastAccepted
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		accepted := map[int64]bool{}
		var max time.Time
		for _, x := range evs {
			if x.ok {
				accepted[x.at.UnixNano()] = true
				if x.at.After(max) {
					max = x.at
				}
			}
		}
		for i, x := range evs {
			for j, y := range evs {
				if x.ok && y.ok && y.finished < x.submit && x.at.Before(y.at.Add(-grace)) {
					t.Errorf("event %d (%v) accepted after event %d (%v) had finished", i, x.at.Sub(t0), j, y.at.Sub(t0))
				}
			}
			if !x.ok && (!accepted[x.last.UnixNano()] || !x.at.Before(x.last.Add(-grace))) {
				t.Errorf("event %d at %v rejected against last %v, which no accepted event had or which is within grace", i, x.at.Sub(t0), x.last.Sub(t0))
			}
		}
		_, err := apply(ctx, e.g, spec, "probe", "hot", max.Add(-grace-time.Nanosecond), func() int { return 0 })
		if !errors.Is(err, idem.ErrOutOfOrder) {
			t.Errorf("probe below max-grace: %v, want ErrOutOfOrder", err)
		}
		// The trail has one entry per attempt (plus the probe).
		execs, rejects := 0, 0
		for _, en := range e.mem.all() {
			switch en.Action {
			case idemaudit.Executed:
				execs++
			case idemaudit.OutOfOrder:
				rejects++
			}
		}
		if execs+rejects != n+1 {
			t.Errorf("trail: %d executed, %d out of order; want %d attempts", execs, rejects, n+1)
		}
		t.Logf("%d accepted, %d rejected", execs, rejects-1)
	})
}

func TestOverrideAudited(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		spec := &idem.Spec{Name: "audit.Override", Ordered: true}
		if _, err := apply(ctx, e.g, spec, "new", "u", t0, func() int { return 1 }); err != nil {
			t.Fatal(err)
		}
		if _, err := apply(ctx, e.g, spec, "old", "u", t0.Add(-time.Hour), func() int { return 2 }); !errors.Is(err, idem.ErrOutOfOrder) {
			t.Fatalf("without override: %v", err)
		}
		octx := idem.AllowOutOfOrder(idemaudit.WithPayload(ctx, []byte(`{"event":"old"}`)), "late sensor upload, ticket OPS-7")
		if v, err := apply(octx, e.g, spec, "old", "u", t0.Add(-time.Hour), func() int { return 2 }); err != nil || v != 2 {
			t.Fatalf("with override: %d, %v", v, err)
		}
		var actions []string
		var override idemaudit.Entry
		for _, en := range e.mem.all() {
			actions = append(actions, string(en.Action))
			if en.Action == idemaudit.Override {
				override = en
			}
		}
		if diff := cmp.Diff([]string{"executed", "out_of_order", "override", "executed"}, actions); diff != "" {
			t.Errorf("actions (-want +got):\n%s", diff)
		}
		if override.Reason != "late sensor upload, ticket OPS-7" || override.Entity == "" || len(override.KeyHash) != 64 || string(override.Payload) != `{"event":"old"}` {
			t.Errorf("override entry: %+v", override)
		}
		if e.pg == nil {
			return
		}
		if err := e.pg.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		rows := e.rows(t, "SELECT action || '|' || reason || '|' || entity || '|' || coalesce(convert_from(payload, 'UTF8'), '-') FROM %s ORDER BY id")
		want := []string{
			"executed||" + override.Entity + "|-",
			"out_of_order|" + e.mem.all()[1].Reason + "|" + override.Entity + "|-",
			"override|late sensor upload, ticket OPS-7|" + override.Entity + `|{"event":"old"}`,
			"executed||" + override.Entity + `|{"event":"old"}`,
		}
		if diff := cmp.Diff(want, rows); diff != "" {
			t.Errorf("pgaudit rows (-want +got):\n%s", diff)
		}
	})
}

type measurement struct {
	User, Event string
	At          time.Duration
	Fail        bool
}

func TestBatch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		spec := &idem.Spec{Name: "audit.Batch", Ordered: true}
		boom := errors.New("sensor offline")
		applyM := func(ctx context.Context, m measurement) error {
			c, k := idemimpl.Begin(e.g, spec)
			k.Key().ID(m.Event)
			k.Entity().String(m.User)
			k.At(t0.Add(m.At))
			_, err := idem.Do(ctx, c, func(context.Context) (int, error) {
				if m.Fail {
					return 0, boom
				}
				return 1, nil
			})
			return err
		}
		// Applied by an earlier batch: u1 up to +10m.
		if err := applyM(ctx, measurement{"u1", "e10", 10 * time.Minute, false}); err != nil {
			t.Fatal(err)
		}
		items := []measurement{
			{"u1", "e30", 30 * time.Minute, false},
			{"u1", "e10", 10 * time.Minute, false}, // applied before: replayed, not out of order
			{"u2", "f5", 5 * time.Minute, false},
			{"u1", "e20", 20 * time.Minute, false}, // sorted before e30
			{"u1", "e05", 5 * time.Minute, false},  // older than e10: out of order, stops u1
			{"u2", "f1", time.Minute, true},        // sorted first for u2; fails, u2 goes on
			{"u2", "f5", 5 * time.Minute, false},   // duplicate inside the batch: replayed
			{"u3", "g1", time.Minute, false},
			{"u2", "f9", 9 * time.Minute, false},
		}
		res := idembatch.Apply(ctx, items, func(m measurement) string { return m.User },
			func(m measurement) time.Time { return t0.Add(m.At) }, applyM)
		var got []string
		for _, r := range res {
			got = append(got, r.Status.String())
		}
		// u1 in time order: e05 (out of order) first, then e10, e20, e30 skipped.
		want := []string{"skipped", "skipped", "applied", "skipped", "out_of_order", "failed", "replayed", "applied", "applied"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("statuses (-want +got):\n%s", diff)
		}
		if !errors.Is(res[4].Err, idem.ErrOutOfOrder) || !errors.Is(res[5].Err, boom) {
			t.Errorf("errors: %v, %v", res[4].Err, res[5].Err)
		}
		// Continuing past the violation: e10 replays, e20 and e30 apply.
		res = idembatch.Apply(ctx, items[:5], func(m measurement) string { return m.User },
			func(m measurement) time.Time { return t0.Add(m.At) }, applyM, idembatch.WithContinueAfterOutOfOrder())
		got = got[:0]
		for _, r := range res {
			got = append(got, r.Status.String())
		}
		if diff := cmp.Diff([]string{"applied", "replayed", "replayed", "applied", "out_of_order"}, got); diff != "" {
			t.Errorf("continue statuses (-want +got):\n%s", diff)
		}
	})
}
