// Package idemprom exports idem outcomes as Prometheus metrics.
//
//	obs, err := idemprom.New(prometheus.DefaultRegisterer)
//	if err != nil { ... }
//	g := idem.NewGuard(store, idem.WithObserver(obs))
//
// Metrics (with the default namespace "idem"):
//
//	idem_calls_total{func, outcome}             counter
//	idem_call_duration_seconds{func, outcome}   histogram
//
// func is the function's stable name (idem.Spec.Name), outcome one of
// executed, failed, replayed, in_progress, duplicate, mismatch, takeover,
// heartbeat_failed, lease_lost, store_error, invalid_key, fail_open,
// out_of_order, override (idem.Outcome.String). There is never a key,
// entity or payload label: each would make a series per call.
//
// idem_calls_total counts outcomes, and a call can report more than one:
// takeover and override are followed by the call's own outcome, a heartbeat
// failure happens while the call runs, and a store error on a fail-open
// Guard is followed by fail_open. The calls that ended are the sum over
// executed, failed, replayed, in_progress, duplicate, mismatch, lease_lost,
// invalid_key, fail_open and out_of_order, plus the store errors that ended
// a call. The replay rate is
//
//	sum(rate(idem_calls_total{outcome="replayed"}[5m]))
//	  / sum(rate(idem_calls_total{outcome=~"executed|replayed"}[5m]))
//
// The histogram observes, for every outcome, the time from the start of the
// call to that outcome; its series appear for the outcomes seen. The
// counter's series are created at zero for every outcome as soon as a
// function reports its first outcome, so that increase() and alerts see a
// lease_lost or store_error the first time one happens instead of a series
// appearing out of nowhere.
//
// Stale claims (owners whose lease expired with no takeover: crashed or
// stuck lock holders) are not events; NewStaleClaims exports the count of
// an idemobs.StaleScanner, which lists a store (idemstore.Admin).
//
// Observe is cheap: the counter and histogram of each (func, outcome) are
// looked up once and kept in an idemobs.Funcs, so a call costs a
// table lookup (for a generated wrapper, a pointer comparison), an atomic
// add and a histogram observation, without allocating: about 11% of a
// memory-store replay (docs/BENCHMARKS.md, "Observers").
package idemprom

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemobs"
)

// Label names.
const (
	FuncLabel    = "func"
	OutcomeLabel = "outcome"
	StepLabel    = "step"
)

// DefaultBuckets span a memory-store replay (tens of microseconds) to a
// long guarded job (minutes), in seconds.
var DefaultBuckets = []float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300}

// outcomes is the size of the per-function tables; idem names outcomes
// 1..16 today. TestOutcomeTableSize fails when idem outgrows it.
const outcomes = 24

// knownOutcomes are the outcomes idem's calls report: their counters start
// at zero and they take the fast path. Ones idem adds later are picked up
// without a change here.
var knownOutcomes = idemobs.CallOutcomes()

// Observer is an idem.Observer recording Prometheus metrics. Make it with
// New; it is safe for concurrent use and may be shared by several Guards.
type Observer struct {
	calls     *prometheus.CounterVec
	steps     *prometheus.CounterVec
	durations *prometheus.HistogramVec
	exemplar  func(context.Context) prometheus.Labels
	funcs     *idemobs.Funcs[funcSeries]
}

// funcSeries holds one function's curried series, indexed by outcome.
type funcSeries struct {
	calls     [outcomes]prometheus.Counter
	durations [outcomes]atomic.Pointer[histogram] // made on first observation
}

type histogram struct{ prometheus.Observer }

type config struct {
	namespace   string
	buckets     []float64
	constLabels prometheus.Labels
	exemplar    func(context.Context) prometheus.Labels
}

// Option configures New.
type Option func(*config)

// WithNamespace replaces the metric name prefix "idem" (an empty namespace
// gives calls_total and call_duration_seconds).
func WithNamespace(ns string) Option { return func(c *config) { c.namespace = ns } }

// WithBuckets replaces DefaultBuckets (seconds).
func WithBuckets(b []float64) Option { return func(c *config) { c.buckets = b } }

// WithConstLabels adds labels to every series (a service or store name,
// when several Guards share a registry and must stay apart).
func WithConstLabels(l prometheus.Labels) Option { return func(c *config) { c.constLabels = l } }

// WithExemplars attaches an exemplar (typically {trace_id="…"}) to each
// observation made with the call's ctx (ObserveContext), taken from the ctx
// by fn; fn returns nil for none. Exemplars are exposed in the OpenMetrics
// format. The Guard does not pass the ctx yet (docs/OPERATIONS.md,
// "Tracing"); Observe never calls fn.
func WithExemplars(fn func(context.Context) prometheus.Labels) Option {
	return func(c *config) { c.exemplar = fn }
}

// New registers the metrics with reg (prometheus.DefaultRegisterer if nil)
// and returns the Observer. If the same metrics are already registered, as
// when two Guards each call New with one registry, it records into the
// registered ones.
func New(reg prometheus.Registerer, opts ...Option) (*Observer, error) {
	c := config{namespace: "idem", buckets: DefaultBuckets}
	for _, o := range opts {
		o(&c)
	}
	if reg == nil {
		reg = prometheus.DefaultRegisterer
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: c.namespace, Name: name, Help: help, ConstLabels: c.constLabels}, labels)
	}
	calls := counter("calls_total",
		"Outcomes of idempotency-guarded calls, by function and outcome (replay rate = replayed / (executed + replayed)).",
		FuncLabel, OutcomeLabel)
	durations := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace:   c.namespace,
		Name:        "call_duration_seconds",
		Help:        "Time from the start of an idempotency-guarded call to its outcome, by function and outcome.",
		ConstLabels: c.constLabels,
		Buckets:     c.buckets,
	}, []string{FuncLabel, OutcomeLabel})
	steps := counter("steps_total",
		"Outcomes of the recovery points (idem.Step) of guarded calls, by function, step and outcome (step_replayed counts steps a resumed call did not run again).",
		FuncLabel, StepLabel, OutcomeLabel)
	var err error
	if calls, err = register(reg, calls); err != nil {
		return nil, err
	}
	if steps, err = register(reg, steps); err != nil {
		return nil, err
	}
	if durations, err = register(reg, durations); err != nil {
		return nil, err
	}
	o := &Observer{calls: calls, steps: steps, durations: durations, exemplar: c.exemplar}
	o.funcs = idemobs.NewFuncs(o.newSeries)
	return o, nil
}

// MustNew is New that panics on a registration error, for package-level
// set-up.
func MustNew(reg prometheus.Registerer, opts ...Option) *Observer {
	o, err := New(reg, opts...)
	if err != nil {
		panic(err)
	}
	return o
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("idemprom: registering metrics: %w", err)
}

// Observe records e.
func (o *Observer) Observe(e idem.Event) { o.record(e, nil) }

// ObserveContext records e with an exemplar from ctx (WithExemplars), or
// as Observe does without that option.
func (o *Observer) ObserveContext(ctx context.Context, e idem.Event) {
	var ex prometheus.Labels
	if o.exemplar != nil {
		ex = o.exemplar(ctx)
	}
	o.record(e, ex)
}

func (o *Observer) record(e idem.Event, ex prometheus.Labels) {
	if e.Step != "" {
		// Steps are few per call and rarer than calls: no series cache.
		o.steps.WithLabelValues(e.Func, e.Step, e.Outcome.String()).Inc()
		return
	}
	fs := o.funcs.Get(e.Func)
	i := int(e.Outcome)
	var c prometheus.Counter
	var h prometheus.Observer
	if i < outcomes && fs.calls[i] != nil {
		c = fs.calls[i]
		hp := fs.durations[i].Load()
		if hp == nil {
			hp = &histogram{o.durations.WithLabelValues(e.Func, e.Outcome.String())}
			// Two first observations may race here; both curried Observers
			// are the same series, so either may win.
			fs.durations[i].Store(hp)
		}
		h = hp.Observer
	} else {
		// An outcome this package does not know: correct, not cached.
		c = o.calls.WithLabelValues(e.Func, e.Outcome.String())
		h = o.durations.WithLabelValues(e.Func, e.Outcome.String())
	}
	if ex == nil {
		c.Inc()
		h.Observe(e.Duration.Seconds())
		return
	}
	c.(prometheus.ExemplarAdder).AddWithExemplar(1, ex)
	h.(prometheus.ExemplarObserver).ObserveWithExemplar(e.Duration.Seconds(), ex)
}

// newSeries makes fn's series: its counters start at zero for every known
// outcome.
func (o *Observer) newSeries(fn string) *funcSeries {
	fs := &funcSeries{}
	for _, oc := range knownOutcomes {
		fs.calls[oc] = o.calls.WithLabelValues(fn, oc.String())
	}
	return fs
}
