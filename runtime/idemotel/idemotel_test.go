package idemotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemobs"
	"github.com/idemgen/idemgen/runtime/idemobs/obstest"
	"github.com/idemgen/idemgen/runtime/idemotel"
)

// setup returns an Observer exporting into a manual metric reader and a
// span recorder.
func setup(t *testing.T, opts ...idemotel.Option) (*idemotel.Observer, *sdkmetric.ManualReader, *tracetest.SpanRecorder) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	obs, err := idemotel.New(append([]idemotel.Option{idemotel.WithMeterProvider(mp), idemotel.WithTracerProvider(tp)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return obs, reader, sr
}

func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != idemotel.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, idemotel.ScopeName)
		}
		for _, m := range sm.Metrics {
			got[m.Name] = m
		}
	}
	return got
}

// attrKey renders a data point's attributes as func/outcome, failing on
// any other attribute.
func attrKey(t *testing.T, set attribute.Set) string {
	t.Helper()
	if set.Len() != 2 {
		t.Errorf("attributes %v, want exactly idem.func and idem.outcome", set.ToSlice())
	}
	f, _ := set.Value(idemotel.FuncKey)
	o, _ := set.Value(idemotel.OutcomeKey)
	return f.AsString() + "/" + o.AsString()
}

// wantCounts is what the script leaves in idem.calls.
var wantCounts = map[string]int64{
	"shop.Charge/executed": 3, "shop.Charge/replayed": 1, "shop.Charge/mismatch": 1, "shop.Charge/in_progress": 1,
	"shop.Charge/lease_lost": 1, "shop.Charge/takeover": 1, "shop.Charge/store_error": 2, "shop.Charge/fail_open": 1,
	"shop.Charge/invalid_key": 1,
	"shop.Refund/failed":      1,
	"shop.Notify/executed":    1, "shop.Notify/duplicate": 1,
	"shop.Sync/heartbeat_failed": 1, "shop.Sync/executed": 1,
	"shop.Track/executed": 2, "shop.Track/out_of_order": 1, "shop.Track/override": 1,
}

// spanned reports whether the script's event becomes a span.
func spanned(e idem.Event) bool {
	return e.Outcome != idem.OutcomeTakeover && e.Outcome != idem.OutcomeHeartbeatFailed && e.Outcome != idem.OutcomeOverride
}

func TestScriptMetrics(t *testing.T) {
	obs, reader, _ := setup(t, idemotel.WithoutSpans())
	events := obstest.Run(t, obs)
	ms := collect(t, reader)
	if len(ms) != 2 {
		t.Errorf("metrics %v, want idem.calls and idem.call.duration", ms)
	}

	calls := ms[idemotel.CallsName]
	if calls.Unit != "{call}" {
		t.Errorf("idem.calls unit %q", calls.Unit)
	}
	sum, ok := calls.Data.(metricdata.Sum[int64])
	if !ok || !sum.IsMonotonic || sum.Temporality != metricdata.CumulativeTemporality {
		t.Fatalf("idem.calls is %T %+v, want a cumulative monotonic int64 sum", calls.Data, calls.Data)
	}
	got := map[string]int64{}
	for _, dp := range sum.DataPoints {
		got[attrKey(t, dp.Attributes)] = dp.Value
	}
	// Every outcome of a function that reported anything, zeros included.
	wantCalls := map[string]int64{}
	for _, fn := range []string{obstest.Charge, obstest.Refund, obstest.Notify, obstest.Sync, obstest.Track} {
		for oc := idem.OutcomeExecuted; oc <= idem.OutcomeOverride; oc++ {
			k := fn + "/" + oc.String()
			wantCalls[k] = wantCounts[k]
		}
	}
	if len(wantCalls) != 5*len(idemobs.CallOutcomes()) {
		t.Fatalf("%d expected series", len(wantCalls))
	}
	if diff := cmp.Diff(wantCalls, got); diff != "" {
		t.Errorf("idem.calls (-want +got):\n%s", diff)
	}

	dur := ms[idemotel.DurationName]
	if dur.Unit != "s" {
		t.Errorf("idem.call.duration unit %q", dur.Unit)
	}
	hist, ok := dur.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("idem.call.duration is %T, want a float64 histogram", dur.Data)
	}
	gotCounts, gotSums := map[string]int64{}, map[string]float64{}
	for _, dp := range hist.DataPoints {
		k := attrKey(t, dp.Attributes)
		gotCounts[k] = int64(dp.Count)
		gotSums[k] = dp.Sum
		if diff := cmp.Diff(idemotel.DefaultBuckets, dp.Bounds); diff != "" {
			t.Errorf("%s bounds (-want +got):\n%s", k, diff)
		}
	}
	wantSums := map[string]float64{}
	for _, e := range events {
		wantSums[e.Func+"/"+e.Outcome.String()] += e.Duration.Seconds()
	}
	if diff := cmp.Diff(wantCounts, gotCounts); diff != "" {
		t.Errorf("idem.call.duration counts (-want +got):\n%s", diff)
	}
	approx := cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })
	if diff := cmp.Diff(wantSums, gotSums, approx); diff != "" {
		t.Errorf("idem.call.duration sums (-want +got):\n%s", diff)
	}
}

type span struct {
	Name   string
	Attrs  map[attribute.Key]any
	Status codes.Code
	Desc   string
	Events []string
}

func TestScriptSpans(t *testing.T) {
	obs, _, sr := setup(t)
	events := obstest.Run(t, obs)
	var got []span
	var durations []time.Duration
	for _, s := range sr.Ended() {
		attrs := map[attribute.Key]any{}
		for _, kv := range s.Attributes() {
			attrs[kv.Key] = kv.Value.AsInterface()
		}
		var evs []string
		for _, e := range s.Events() {
			evs = append(evs, e.Name)
		}
		got = append(got, span{s.Name(), attrs, s.Status().Code, s.Status().Description, evs})
		durations = append(durations, s.EndTime().Sub(s.StartTime()))
		if s.Parent().IsValid() {
			t.Errorf("span %s has a parent; without a ctx it cannot", s.Name())
		}
		if s.SpanKind().String() != "internal" {
			t.Errorf("span %s kind %v", s.Name(), s.SpanKind())
		}
	}
	a := func(fn, outcome string, fence int64) map[attribute.Key]any {
		m := map[attribute.Key]any{idemotel.FuncKey: fn, idemotel.OutcomeKey: outcome}
		if fence != 0 {
			m[idemotel.FenceKey] = fence
		}
		return m
	}
	errOf := func(i int) string { return events[i].Err.Error() }
	exc := []string{"exception"}
	want := []span{
		{"idem shop.Charge", a(obstest.Charge, "executed", 1), codes.Unset, "", nil},
		{"idem shop.Charge", a(obstest.Charge, "replayed", 1), codes.Unset, "", nil},
		{"idem shop.Charge", a(obstest.Charge, "mismatch", 1), codes.Unset, "", nil},
		{"idem shop.Charge", a(obstest.Charge, "in_progress", 0), codes.Unset, "", nil},
		{"idem shop.Charge", a(obstest.Charge, "executed", 1), codes.Unset, "", nil},
		{"idem shop.Refund", a(obstest.Refund, "failed", 1), codes.Error, "card declined", exc},
		{"idem shop.Notify", a(obstest.Notify, "executed", 1), codes.Unset, "", nil},
		{"idem shop.Notify", a(obstest.Notify, "duplicate", 1), codes.Unset, "", nil},
		{"idem shop.Charge", a(obstest.Charge, "lease_lost", 1), codes.Error, errOf(8), exc},
		// takeover (event 9) is not a span: the call's own span follows.
		{"idem shop.Charge", a(obstest.Charge, "executed", 3), codes.Unset, "", nil},
		// heartbeat_failed (event 11) happens inside the call.
		{"idem shop.Sync", a(obstest.Sync, "executed", 1), codes.Unset, "", nil},
		{"idem shop.Charge", a(obstest.Charge, "store_error", 0), codes.Error, errOf(13), exc},
		{"idem shop.Charge", a(obstest.Charge, "store_error", 0), codes.Error, errOf(14), exc},
		{"idem shop.Charge", a(obstest.Charge, "fail_open", 0), codes.Unset, "", nil},
		{"idem shop.Charge", a(obstest.Charge, "invalid_key", 0), codes.Error, errOf(16), exc},
		{"idem shop.Track", a(obstest.Track, "executed", 1), codes.Unset, "", nil},
		{"idem shop.Track", withReason(a(obstest.Track, "out_of_order", 0), events[18].Reason), codes.Unset, "", nil},
		// override (event 19) comes before the call runs.
		{"idem shop.Track", a(obstest.Track, "executed", 1), codes.Unset, "", nil},
	}
	if events[18].Reason == "" {
		t.Error("the out_of_order event has no reason")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
	// Each span lasts exactly its event's Duration.
	var wantDur []time.Duration
	for _, e := range events {
		if spanned(e) {
			wantDur = append(wantDur, e.Duration)
		}
	}
	if diff := cmp.Diff(wantDur, durations); diff != "" {
		t.Errorf("span durations (-want +got):\n%s", diff)
	}
}

func TestSpanKey(t *testing.T) {
	obs, reader, sr := setup(t, idemotel.WithKey())
	events := obstest.Run(t, obs)
	var want, got []string
	for _, e := range events {
		if spanned(e) {
			want = append(want, e.Key+" "+e.Entity)
		}
		if (e.Func == obstest.Track) != (e.Entity != "") {
			t.Errorf("event %v/%v entity %q: only the ordered calls have one", e.Func, e.Outcome, e.Entity)
		}
	}
	for _, s := range sr.Ended() {
		k, ent := "", ""
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case idemotel.KeyKey:
				k = kv.Value.AsString()
			case idemotel.EntityKey:
				ent = kv.Value.AsString()
			}
		}
		got = append(got, k+" "+ent)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("idem.key on spans (-want +got):\n%s", diff)
	}
	// Never on metrics.
	for name, m := range collect(t, reader) {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, dp := range d.DataPoints {
				attrKey(t, dp.Attributes)
			}
		case metricdata.Histogram[float64]:
			for _, dp := range d.DataPoints {
				attrKey(t, dp.Attributes)
			}
		default:
			t.Errorf("%s: unexpected %T", name, d)
		}
	}
}

func TestSampledOut(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr), sdktrace.WithSampler(sdktrace.NeverSample()))
	obs, err := idemotel.New(idemotel.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	obs.Observe(idem.Event{Func: "f", Outcome: idem.OutcomeFailed, Err: obstest.ErrDeclined})
	if n := len(sr.Ended()); n != 0 {
		t.Errorf("%d spans recorded with NeverSample", n)
	}
}

// With metrics only, an Observe after the first of its function does not
// allocate in the observer (the SDK's aggregation is measured with it).
func TestMetricsDoNotAllocate(t *testing.T) {
	obs, _, _ := setup(t, idemotel.WithoutSpans())
	e := idem.Event{Func: "shop.Charge", Outcome: idem.OutcomeReplayed, Fence: 1, Duration: time.Microsecond}
	obs.Observe(e)
	if n := testing.AllocsPerRun(1000, func() { obs.Observe(e) }); n != 0 {
		t.Errorf("Observe allocates %v times per call", n)
	}
}

// An outcome idem adds after this package is still counted, and Close
// stops the counter's reporting.
func TestUnknownOutcomeAndClose(t *testing.T) {
	obs, reader, _ := setup(t, idemotel.WithoutSpans())
	obs.Observe(idem.Event{Func: "f", Outcome: 40})
	obs.Observe(idem.Event{Func: "f", Outcome: 40})
	sum := collect(t, reader)[idemotel.CallsName].Data.(metricdata.Sum[int64])
	got := map[string]int64{}
	for _, dp := range sum.DataPoints {
		got[attrKey(t, dp.Attributes)] = dp.Value
	}
	want := map[string]int64{"f/outcome(40)": 2}
	for oc := idem.OutcomeExecuted; oc <= idem.OutcomeOverride; oc++ {
		want["f/"+oc.String()] = 0
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("idem.calls (-want +got):\n%s", diff)
	}
	if err := obs.Close(); err != nil {
		t.Fatal(err)
	}
	if m, ok := collect(t, reader)[idemotel.CallsName]; ok {
		if s := m.Data.(metricdata.Sum[int64]); len(s.DataPoints) != 0 {
			t.Errorf("idem.calls still reported after Close: %v", s.DataPoints)
		}
	}
}

func withReason(m map[attribute.Key]any, reason string) map[attribute.Key]any {
	m[idemotel.ReasonKey] = reason
	return m
}

// With the caller's ctx (ObserveContext), the call's span is a child of
// the caller's span, in its trace.
func TestObserveContextParentsSpan(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	obs, err := idemotel.New(idemotel.WithTracerProvider(tp), idemotel.WithMeterProvider(sdkmetric.NewMeterProvider()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, parent := tp.Tracer("test").Start(context.Background(), "POST /charges")
	obs.ObserveContext(ctx, idem.Event{Func: "shop.Charge", Outcome: idem.OutcomeReplayed, Fence: 1, Duration: time.Millisecond})
	parent.End()
	spans := sr.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	child := spans[0]
	if child.Name() != "idem shop.Charge" {
		t.Fatalf("first span %q", child.Name())
	}
	if child.Parent().SpanID() != parent.SpanContext().SpanID() || child.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("idem span parent %v trace %v, want the caller's span %v", child.Parent().SpanID(), child.SpanContext().TraceID(), parent.SpanContext())
	}
}

// Step outcomes go to idem.steps by function and step, never to idem.calls
// or to spans.
func TestSteps(t *testing.T) {
	obs, reader, sr := setup(t)
	obs.Observe(idem.Event{Func: "shop.Charge", Outcome: idem.OutcomeStepRan, Step: "card"})
	obs.Observe(idem.Event{Func: "shop.Charge", Outcome: idem.OutcomeStepReplayed, Step: "card"})
	obs.Observe(idem.Event{Func: "shop.Charge", Outcome: idem.OutcomeLeaseLost, Step: "email"})
	ms := collect(t, reader)
	got := map[string]int64{}
	for _, dp := range ms[idemotel.StepsName].Data.(metricdata.Sum[int64]).DataPoints {
		f, _ := dp.Attributes.Value(idemotel.FuncKey)
		s, _ := dp.Attributes.Value(idemotel.StepKey)
		o, _ := dp.Attributes.Value(idemotel.OutcomeKey)
		got[f.AsString()+"/"+s.AsString()+"/"+o.AsString()] = dp.Value
	}
	want := map[string]int64{"shop.Charge/card/step_ran": 1, "shop.Charge/card/step_replayed": 1, "shop.Charge/email/lease_lost": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("idem.steps (-want +got):\n%s", diff)
	}
	if m, ok := ms[idemotel.CallsName]; ok && len(m.Data.(metricdata.Sum[int64]).DataPoints) != 0 {
		t.Errorf("step events made idem.calls points: %v", m.Data)
	}
	if n := len(sr.Ended()); n != 0 {
		t.Errorf("step events made %d spans, want none", n)
	}
}
