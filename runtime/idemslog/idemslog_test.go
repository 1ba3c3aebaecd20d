package idemslog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemobs/obstest"
	"github.com/idemgen/idemgen/runtime/idemslog"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

// run logs the script at handler level min and returns the decoded
// records (time dropped, duration checked for presence then dropped) and
// the events.
func run(t *testing.T, min slog.Level, opts ...idemslog.Option) ([]map[string]any, []idem.Event) {
	t.Helper()
	var buf idemtest.SyncBuffer
	h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: min})
	events := obstest.Run(t, idemslog.New(slog.New(h), opts...))
	recs := buf.JSONLines(t)
	for _, m := range recs {
		if _, ok := m["time"]; !ok {
			t.Errorf("record without time: %v", m)
		}
		d, ok := m["duration"].(float64)
		if !ok || d < 0 {
			t.Errorf("record without a duration: %v", m)
		}
		delete(m, "time")
		delete(m, "duration")
	}
	return recs, events
}

func rec(level, fn, outcome string, fence float64, err string) map[string]any {
	m := map[string]any{"level": level, "msg": "idem " + outcome, "func": fn, "outcome": outcome}
	if fence != 0 {
		m["fence"] = fence
	}
	if err != "" {
		m["err"] = err
	}
	return m
}

const (
	errLeaseLost = "idem: lease lost"
	errInjected  = "obstest: store unreachable (injected)"
)

func TestScriptAllLevels(t *testing.T) {
	got, events := run(t, slog.LevelDebug)
	// Error texts come from the runtime and the store; pin the ones the
	// script controls and take the runtime's wording from the events.
	errOf := func(i int) string { return events[i].Err.Error() }
	want := []map[string]any{
		rec("DEBUG", obstest.Charge, "executed", 1, ""),
		rec("DEBUG", obstest.Charge, "replayed", 1, ""),
		rec("INFO", obstest.Charge, "mismatch", 1, ""),
		rec("INFO", obstest.Charge, "in_progress", 0, ""),
		rec("DEBUG", obstest.Charge, "executed", 1, ""),
		rec("INFO", obstest.Refund, "failed", 1, "card declined"),
		rec("DEBUG", obstest.Notify, "executed", 1, ""),
		rec("INFO", obstest.Notify, "duplicate", 1, ""),
		rec("ERROR", obstest.Charge, "lease_lost", 1, errOf(8)),
		rec("INFO", obstest.Charge, "takeover", 3, ""),
		rec("DEBUG", obstest.Charge, "executed", 3, ""),
		rec("WARN", obstest.Sync, "heartbeat_failed", 1, "heartbeat: "+errInjected),
		rec("DEBUG", obstest.Sync, "executed", 1, ""),
		rec("ERROR", obstest.Charge, "store_error", 0, errOf(13)),
		rec("ERROR", obstest.Charge, "store_error", 0, errOf(14)),
		rec("WARN", obstest.Charge, "fail_open", 0, errOf(15)),
		rec("INFO", obstest.Charge, "invalid_key", 0, errOf(16)),
		rec("DEBUG", obstest.Track, "executed", 1, ""),
		rec("INFO", obstest.Track, "out_of_order", 0, errOf(18)),
		withReason(rec("INFO", obstest.Track, "override", 1, ""), obstest.OverrideReason),
		rec("DEBUG", obstest.Track, "executed", 1, ""),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log records (-want +got):\n%s", diff)
	}
	for _, i := range []int{8} {
		if !strings.Contains(errOf(i), errLeaseLost) {
			t.Errorf("event %d error %q does not say %q", i, errOf(i), errLeaseLost)
		}
	}
	for _, i := range []int{13, 14, 15} {
		if !strings.Contains(errOf(i), errInjected) {
			t.Errorf("event %d error %q does not carry the store's error", i, errOf(i))
		}
	}
	for _, r := range got {
		if _, ok := r["key"]; ok {
			t.Errorf("key logged without WithKey: %v", r)
		}
	}
}

// At the usual Info level the per-call successes are not logged.
func TestScriptInfo(t *testing.T) {
	got, _ := run(t, slog.LevelInfo)
	var outcomes []string
	for _, r := range got {
		outcomes = append(outcomes, r["outcome"].(string))
	}
	want := []string{"mismatch", "in_progress", "failed", "duplicate", "lease_lost", "takeover",
		"heartbeat_failed", "store_error", "store_error", "fail_open", "invalid_key", "out_of_order", "override"}
	if diff := cmp.Diff(want, outcomes); diff != "" {
		t.Errorf("outcomes logged at Info (-want +got):\n%s", diff)
	}
}

func TestOptions(t *testing.T) {
	got, events := run(t, slog.LevelInfo, idemslog.WithSuccessLevel(slog.LevelInfo), idemslog.WithKey(),
		idemslog.WithLevel(idem.OutcomeMismatch, slog.LevelWarn), idemslog.WithLevel(idem.OutcomeInProgress, slog.LevelDebug))
	var levels, keys []string
	var wantLevels, wantKeys []string
	for _, e := range events {
		if e.Outcome == idem.OutcomeInProgress {
			continue // lowered to Debug: not logged
		}
		lvl := map[idem.Outcome]string{idem.OutcomeExecuted: "INFO", idem.OutcomeReplayed: "INFO", idem.OutcomeMismatch: "WARN"}[e.Outcome]
		if lvl == "" {
			lvl = idemslog.New(nil).Level(e.Outcome).String()
		}
		wantLevels = append(wantLevels, lvl)
		wantKeys = append(wantKeys, e.Key+" "+e.Entity)
		switch {
		case e.Outcome == idem.OutcomeInvalidKey && e.Key != "":
			t.Errorf("invalid_key event with key %q", e.Key)
		case e.Outcome != idem.OutcomeInvalidKey && (!strings.HasPrefix(e.Key, "idem:shop.") || len(e.Key) < 64):
			t.Errorf("key %q is not a hashed store key", e.Key)
		}
		if (e.Func == obstest.Track) != (e.Entity != "") {
			t.Errorf("event %v/%v entity %q: only the ordered calls have one", e.Func, e.Outcome, e.Entity)
		}
	}
	for _, r := range got {
		levels = append(levels, r["level"].(string))
		k, _ := r["key"].(string)
		ent, _ := r["entity"].(string)
		keys = append(keys, k+" "+ent)
	}
	if diff := cmp.Diff(wantLevels, levels); diff != "" {
		t.Errorf("levels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantKeys, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
}

// The attribute shape with a text handler, for people reading logs.
func TestTextShape(t *testing.T) {
	var buf bytes.Buffer
	h := slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	idemslog.New(slog.New(h)).Observe(idem.Event{Func: "shop.Charge", Outcome: idem.OutcomeLeaseLost, Key: "idem:shop.Charge:v0:ab",
		Fence: 7, Duration: 1500 * time.Millisecond, Err: idem.ErrLeaseLost})
	want := `level=ERROR msg="idem lease_lost" func=shop.Charge outcome=lease_lost fence=7 duration=1.5s err="idem: lease lost"` + "\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDisabledDoesNotAllocate(t *testing.T) {
	o := idemslog.New(slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))) // Info
	e := idem.Event{Func: "shop.Charge", Outcome: idem.OutcomeReplayed, Key: "k", Fence: 1, Duration: time.Microsecond}
	if n := testing.AllocsPerRun(100, func() { o.Observe(e) }); n != 0 {
		t.Errorf("Observe below the logger's level allocates %v times", n)
	}
}

func withReason(m map[string]any, reason string) map[string]any {
	m["reason"] = reason
	return m
}

type traceKey struct{}

// ctxHandler adds the trace ID it finds in the record's ctx.
type ctxHandler struct{ slog.Handler }

func (h ctxHandler) Handle(ctx context.Context, r slog.Record) error {
	if id, ok := ctx.Value(traceKey{}).(string); ok {
		r.AddAttrs(slog.String("trace_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

// ObserveContext hands the ctx to the handler (a Guard will, once
// runtime/idem passes it: docs/OPERATIONS.md, "Tracing").
func TestObserveContext(t *testing.T) {
	var buf bytes.Buffer
	o := idemslog.New(slog.New(ctxHandler{slog.NewJSONHandler(&buf, nil)}))
	ctx := context.WithValue(context.Background(), traceKey{}, "4bf92f3577b34da6")
	o.ObserveContext(ctx, idem.Event{Func: "shop.Charge", Outcome: idem.OutcomeLeaseLost, Fence: 2})
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m["trace_id"] != "4bf92f3577b34da6" {
		t.Errorf("record %v has no trace_id from the ctx", m)
	}
}
