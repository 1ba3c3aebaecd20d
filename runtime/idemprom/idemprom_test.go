package idemprom_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemobs"
	"github.com/idemgen/idemgen/runtime/idemobs/obstest"
	"github.com/idemgen/idemgen/runtime/idemprom"
)

// nonZero is what the script leaves in idem_calls_total, by func and
// outcome; every other (func, outcome) of a function that reported
// anything is exported at zero.
var nonZero = map[string]map[string]int{
	obstest.Charge: {"executed": 3, "replayed": 1, "mismatch": 1, "in_progress": 1, "lease_lost": 1,
		"takeover": 1, "store_error": 2, "fail_open": 1, "invalid_key": 1},
	obstest.Refund: {"failed": 1},
	obstest.Notify: {"executed": 1, "duplicate": 1},
	obstest.Sync:   {"heartbeat_failed": 1, "executed": 1},
	obstest.Track:  {"executed": 2, "out_of_order": 1, "override": 1},
}

var allOutcomes = []string{"executed", "failed", "replayed", "in_progress", "duplicate", "mismatch", "takeover",
	"heartbeat_failed", "lease_lost", "store_error", "invalid_key", "fail_open", "out_of_order", "override"}

// The per-function tables must cover every outcome idem names.
func TestOutcomeTableSize(t *testing.T) {
	for o := idem.Outcome(1); o < 24; o++ {
		want := "outcome(" + fmt.Sprint(int(o)) + ")"
		if o <= idem.OutcomeStepReplayed && o.String() == want {
			t.Errorf("outcome %d has no name", o)
		}
	}
	if s := idem.Outcome(24).String(); s != "outcome(24)" {
		t.Errorf("idem names outcome 24 (%q): raise idemprom's and idemotel's outcomes constant", s)
	}
	if n := len(idemobs.CallOutcomes()); len(allOutcomes) != n {
		t.Errorf("allOutcomes lists %d outcomes, idem's calls have %d", len(allOutcomes), n)
	}
}

func expectedCalls(namespace string) string {
	name := namespace + "_calls_total"
	var b strings.Builder
	fmt.Fprintf(&b, "# HELP %s Outcomes of idempotency-guarded calls, by function and outcome (replay rate = replayed / (executed + replayed)).\n", name)
	fmt.Fprintf(&b, "# TYPE %s counter\n", name)
	funcs := []string{obstest.Charge, obstest.Notify, obstest.Refund, obstest.Sync, obstest.Track}
	outs := append([]string(nil), allOutcomes...)
	sort.Strings(outs)
	for _, f := range funcs {
		for _, o := range outs {
			fmt.Fprintf(&b, "%s{func=%q,outcome=%q} %d\n", name, f, o, nonZero[f][o])
		}
	}
	return b.String()
}

func TestScriptCounters(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	obs, err := idemprom.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	obstest.Run(t, obs)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expectedCalls("idem")), "idem_calls_total"); err != nil {
		t.Error(err)
	}
	// Exactly two metric families, nothing keyed by anything but func and outcome.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName())
			}
			if diff := cmp.Diff([]string{"func", "outcome"}, labels); diff != "" {
				t.Errorf("%s labels (-want +got):\n%s", mf.GetName(), diff)
			}
		}
	}
	if diff := cmp.Diff([]string{"idem_call_duration_seconds", "idem_calls_total"}, names); diff != "" {
		t.Errorf("metric families (-want +got):\n%s", diff)
	}
}

// The histogram has a series for each (func, outcome) seen, with one
// observation per event, in the default buckets.
func TestScriptHistogram(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	obs := idemprom.MustNew(reg)
	events := obstest.Run(t, obs)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	sums := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "idem_call_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			k := m.GetLabel()[0].GetValue() + "/" + m.GetLabel()[1].GetValue()
			got[k] = h.GetSampleCount()
			sums[k] = h.GetSampleSum()
			var bounds []float64
			for _, b := range h.GetBucket() {
				bounds = append(bounds, b.GetUpperBound())
			}
			if diff := cmp.Diff(idemprom.DefaultBuckets, bounds); diff != "" {
				t.Errorf("%s buckets (-want +got):\n%s", k, diff)
			}
		}
	}
	want := map[string]uint64{}
	wantSums := map[string]float64{}
	for f, outs := range nonZero {
		for o, n := range outs {
			want[f+"/"+o] = uint64(n)
		}
	}
	for _, e := range events {
		wantSums[e.Func+"/"+e.Outcome.String()] += e.Duration.Seconds()
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("histogram sample counts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantSums, sums, cmpApprox); diff != "" {
		t.Errorf("histogram sums (-want +got):\n%s", diff)
	}
	// The heartbeat failed after about a third of the 900ms lease.
	if s := sums[obstest.Sync+"/heartbeat_failed"]; s < 0.3 {
		t.Errorf("heartbeat_failed observed %vs, want >= 0.3s", s)
	}
}

var cmpApprox = cmp.Comparer(func(a, b float64) bool {
	d := a - b
	return d < 1e-9 && d > -1e-9
})

func TestOptionsAndSharing(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	opts := []idemprom.Option{idemprom.WithNamespace("billing"), idemprom.WithBuckets([]float64{1})}
	a, err := idemprom.New(reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	// A second Observer on the same registry records into the same series.
	b, err := idemprom.New(reg, opts...)
	if err != nil {
		t.Fatalf("second New on one registry: %v", err)
	}
	a.Observe(idem.Event{Func: "f", Outcome: idem.OutcomeReplayed})
	b.Observe(idem.Event{Func: "f", Outcome: idem.OutcomeReplayed})
	if got := counterValue(t, reg, "billing_calls_total", "f", "replayed"); got != 2 {
		t.Errorf("replayed = %v, want 2", got)
	}
	// Different label sets on one name are a conflict New reports.
	if _, err := idemprom.New(reg, idemprom.WithNamespace("billing"), idemprom.WithConstLabels(prometheus.Labels{"svc": "x"})); err == nil {
		t.Error("New with conflicting const labels: no error")
	}
}

// An outcome idem adds after this package still gets counted.
func TestUnknownOutcome(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	obs := idemprom.MustNew(reg)
	obs.Observe(idem.Event{Func: "f", Outcome: 40})
	obs.Observe(idem.Event{Func: "f", Outcome: 40})
	if got := counterValue(t, reg, "idem_calls_total", "f", "outcome(40)"); got != 2 {
		t.Errorf("outcome(40) = %v, want 2", got)
	}
}

func counterValue(t *testing.T, reg *prometheus.Registry, name, fn, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == fn && m.GetLabel()[1].GetValue() == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s{func=%q,outcome=%q}", name, fn, outcome)
	return 0
}

func TestObserveDoesNotAllocate(t *testing.T) {
	obs := idemprom.MustNew(prometheus.NewRegistry())
	e := idem.Event{Func: "shop.Charge", Outcome: idem.OutcomeReplayed, Fence: 1}
	obs.Observe(e) // first sighting builds the function's series
	if n := testing.AllocsPerRun(1000, func() { obs.Observe(e) }); n != 0 {
		t.Errorf("Observe allocates %v times per call", n)
	}
}

// Past the scanned functions, lookups go through the map; each function
// keeps its own series whatever path finds it.
func TestManyFunctions(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	obs := idemprom.MustNew(reg)
	const n = 20
	for round := 1; round <= 3; round++ {
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				obs.Observe(idem.Event{Func: fmt.Sprintf("pkg.F%02d", i), Outcome: idem.OutcomeExecuted})
			}
		}
	}
	for i := 0; i < n; i++ {
		if got, want := counterValue(t, reg, "idem_calls_total", fmt.Sprintf("pkg.F%02d", i), "executed"), float64(3*(i+1)); got != want {
			t.Errorf("pkg.F%02d executed = %v, want %v", i, got, want)
		}
	}
}

type traceKey struct{}

// With WithExemplars and the call's ctx, the counter and the histogram
// carry the trace ID as an exemplar; Observe (no ctx) adds none.
func TestExemplars(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	obs := idemprom.MustNew(reg, idemprom.WithExemplars(func(ctx context.Context) prometheus.Labels {
		if id, ok := ctx.Value(traceKey{}).(string); ok {
			return prometheus.Labels{"trace_id": id}
		}
		return nil
	}))
	ctx := context.WithValue(context.Background(), traceKey{}, "4bf92f3577b34da6a3ce929d0e0e4736")
	obs.ObserveContext(ctx, idem.Event{Func: "f", Outcome: idem.OutcomeLeaseLost, Duration: 2 * time.Second})
	obs.ObserveContext(context.Background(), idem.Event{Func: "f", Outcome: idem.OutcomeExecuted, Duration: time.Millisecond})
	obs.Observe(idem.Event{Func: "f", Outcome: idem.OutcomeReplayed, Duration: time.Millisecond})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			k := mf.GetName() + "/" + m.GetLabel()[1].GetValue()
			var exs []*dto.Exemplar
			if c := m.GetCounter(); c != nil && c.GetExemplar() != nil {
				exs = append(exs, c.GetExemplar())
			}
			if h := m.GetHistogram(); h != nil {
				for _, b := range h.GetBucket() {
					if b.GetExemplar() != nil {
						exs = append(exs, b.GetExemplar())
					}
				}
			}
			for _, ex := range exs {
				for _, l := range ex.GetLabel() {
					got[k] += l.GetName() + "=" + l.GetValue()
				}
			}
		}
	}
	want := map[string]string{
		"idem_calls_total/lease_lost":           "trace_id=4bf92f3577b34da6a3ce929d0e0e4736",
		"idem_call_duration_seconds/lease_lost": "trace_id=4bf92f3577b34da6a3ce929d0e0e4736",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exemplars (-want +got):\n%s", diff)
	}
}

// Step outcomes go to idem_steps_total by function and step, never to the
// calls' series.
func TestSteps(t *testing.T) {
	reg := prometheus.NewRegistry()
	obs := idemprom.MustNew(reg)
	for _, e := range []idem.Event{
		{Func: "shop.Charge", Outcome: idem.OutcomeStepRan, Step: "card"},
		{Func: "shop.Charge", Outcome: idem.OutcomeStepReplayed, Step: "card"},
		{Func: "shop.Charge", Outcome: idem.OutcomeStepReplayed, Step: "card"},
		{Func: "shop.Charge", Outcome: idem.OutcomeLeaseLost, Step: "email"},
	} {
		obs.Observe(e)
	}
	want := `# HELP idem_steps_total Outcomes of the recovery points (idem.Step) of guarded calls, by function, step and outcome (step_replayed counts steps a resumed call did not run again).
# TYPE idem_steps_total counter
idem_steps_total{func="shop.Charge",outcome="lease_lost",step="email"} 1
idem_steps_total{func="shop.Charge",outcome="step_ran",step="card"} 1
idem_steps_total{func="shop.Charge",outcome="step_replayed",step="card"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "idem_steps_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "idem_calls_total"); n != 0 {
		t.Errorf("step events made %d idem_calls_total series, want none", n)
	}
}
