package idemaudit_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemaudit"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

func TestSlogSink(t *testing.T) {
	var buf idemtest.SyncBuffer
	sink := idemaudit.NewSlogSink(slog.New(slog.NewJSONHandler(&buf, nil)))
	fixed := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	g := idem.NewGuard(memstore.New(), idem.WithObserver(idemaudit.New(sink, idemaudit.WithClock(func() time.Time { return fixed }))))
	spec := &idem.Spec{Name: "audit.Slog", Ordered: true, OnFailure: idem.FailureLock}
	ctx := context.Background()
	boom := errors.New("card declined")
	call := func(ctx context.Context, id string, at time.Duration, fail bool) error {
		c, k := idemimpl.Begin(g, spec)
		k.Key().ID(id)
		k.Entity().String("user-1")
		k.At(fixed.Add(at))
		_, err := idem.Do(ctx, c, func(context.Context) (int, error) {
			if fail {
				return 0, boom
			}
			return 1, nil
		})
		return err
	}
	call(ctx, "a", time.Minute, false)
	call(ctx, "a", time.Minute, false)
	call(ctx, "b", 0, false)
	call(ctx, "c", 2*time.Minute, true)
	call(idemaudit.WithPayload(idem.AllowOutOfOrder(ctx, "replay from backup"), []byte("ev-b")), "b", 0, false)

	var got []map[string]any
	for _, m := range buf.JSONLines(t) {
		if m["msg"] != "idem audit" || m["func"] != "audit.Slog" || len(m["key_hash"].(string)) != 64 || len(m["entity"].(string)) != 64 {
			t.Errorf("line lacks the common fields: %v", m)
		}
		got = append(got, map[string]any{"action": m["action"], "reason": m["reason"], "payload": m["payload"]})
	}
	if len(got) != 6 {
		t.Fatalf("audit log has %d lines, want 6: %v", len(got), got)
	}
	want := []map[string]any{
		{"action": "executed", "reason": nil, "payload": nil},
		{"action": "replayed", "reason": nil, "payload": nil},
		{"action": "out_of_order", "reason": got[2]["reason"], "payload": nil},
		{"action": "failed", "reason": "card declined", "payload": nil},
		{"action": "override", "reason": "replay from backup", "payload": "ZXYtYg=="},
		{"action": "executed", "reason": nil, "payload": "ZXYtYg=="},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit log (-want +got):\n%s", diff)
	}
	if r, _ := got[2]["reason"].(string); !strings.Contains(r, "out of order") {
		t.Errorf("out-of-order reason: %q", r)
	}
}

func TestActionOf(t *testing.T) {
	for o := idem.OutcomeExecuted; o <= idem.OutcomeOverride; o++ {
		a := idemaudit.ActionOf(o)
		if a == idemaudit.OtherAction && o != idem.OutcomeTakeover && o != idem.OutcomeHeartbeatFailed {
			t.Errorf("%v has no audit action", o)
		}
	}
	if got := idemaudit.ActionOf(idem.Outcome(200)); got != idemaudit.OtherAction {
		t.Errorf("unknown outcome: %v", got)
	}
}
