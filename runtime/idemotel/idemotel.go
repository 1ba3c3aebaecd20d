// Package idemotel reports idem outcomes to OpenTelemetry: metrics, and a
// span per guarded call.
//
//	obs, err := idemotel.New(
//		idemotel.WithMeterProvider(mp),   // default: otel.GetMeterProvider()
//		idemotel.WithTracerProvider(tp), // default: otel.GetTracerProvider()
//	)
//	if err != nil { ... }
//	g := idem.NewGuard(store, idem.WithObserver(obs))
//
// # Metrics
//
//	idem.calls           Int64ObservableCounter, unit {call}
//	idem.call.duration   Float64Histogram, unit s
//
// both with the attributes idem.func (idem.Spec.Name) and idem.outcome
// (executed, failed, replayed, in_progress, duplicate, mismatch, takeover,
// heartbeat_failed, lease_lost, store_error, invalid_key, fail_open,
// out_of_order, override). They
// mean what runtime/idemprom's idem_calls_total and
// idem_call_duration_seconds mean: one count per outcome (a call can report
// more than one, e.g. takeover and then executed), and the time from the
// start of the call to the outcome. There is never a key, entity or
// payload attribute on a metric.
//
// idem.calls is counted by the Observer itself (an atomic add per event)
// and reported to the SDK when metrics are collected, an observable
// counter, because a synchronous SDK measurement costs several times a
// memory-store replay (docs/BENCHMARKS.md, "Observers"); the histogram
// has no asynchronous form and is measured per event. As with
// runtime/idemprom, once a function reports anything its counts are
// reported for every outcome, zeros included, so that alerts see the first
// lease_lost as an increase. Close unregisters the collection callback.
//
// Stale claims (owners whose lease expired with no takeover) are not
// events; NewStaleClaims reports the count of an idemobs.StaleScanner,
// which lists a store (idemstore.Admin), as gauges.
//
// # Spans
//
// An idem.Observer sees outcomes, after the fact, without the caller's
// context. So each call-ending outcome (every outcome but takeover,
// override and heartbeat_failed, which happen inside a call that reports
// its own end) becomes a span built from the event: it starts
// Event.Duration before the outcome and ends at it, is named
// "idem <func>", and carries idem.func, idem.outcome, idem.fence,
// idem.reason (an out-of-order rejection's) and, with WithKey, idem.key
// and idem.entity (the hashed store and order keys). Its status is Error
// when the call ended in an error the caller did not ask for (failed,
// lease_lost, store_error, invalid_key, or a replayed recorded failure);
// answers the idempotency contract defines (in_progress, duplicate,
// mismatch, out_of_order) are outcomes, not errors.
//
// Without the caller's context these spans are roots of their own traces,
// not children of the request that made the call, and the guarded
// function's own spans are not their children. That needs a hook in
// runtime/idem (docs/OPERATIONS.md, "Tracing"). WithoutSpans turns them off
// and keeps the metrics.
package idemotel

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemobs"
)

// ScopeName is the instrumentation scope of the meter and tracer.
const ScopeName = "github.com/idemgen/idemgen/runtime/idemotel"

// Instrument and attribute names.
const (
	CallsName    = "idem.calls"
	DurationName = "idem.call.duration"
	StepsName    = "idem.steps"

	FuncKey    = attribute.Key("idem.func")
	OutcomeKey = attribute.Key("idem.outcome")
	FenceKey   = attribute.Key("idem.fence")
	KeyKey     = attribute.Key("idem.key")
	EntityKey  = attribute.Key("idem.entity")
	ReasonKey  = attribute.Key("idem.reason")
	StepKey    = attribute.Key("idem.step")
)

// DefaultBuckets are the duration histogram's explicit bucket boundaries
// (seconds), advised to the SDK: a memory-store replay to a long job.
var DefaultBuckets = []float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300}

// outcomes is the size of the per-function tables; idem names outcomes
// 1..16 today (runtime/idemprom's TestOutcomeTableSize watches both).
const outcomes = 24

// knownOutcomes are the outcomes idem's calls report; ones it adds later
// are picked up without a change here.
var knownOutcomes = idemobs.CallOutcomes()

// Observer is an idem.Observer recording OpenTelemetry metrics and spans.
// Make it with New; it is safe for concurrent use.
type Observer struct {
	calls    metric.Int64ObservableCounter
	steps    metric.Int64Counter
	duration metric.Float64Histogram
	reg      metric.Registration
	tracer   trace.Tracer // nil: no spans
	withKey  bool
	funcs    *idemobs.Funcs[funcSeries]

	mu sync.Mutex
	// other counts outcomes newer than this package, under mu.
	other map[otherKey]int64
}

type otherKey struct {
	fn      string
	outcome idem.Outcome
}

// funcSeries holds one function's measurement options per outcome, built
// once so a measurement neither builds an attribute set nor allocates.
type funcSeries struct {
	spanName string
	counts   [outcomes]atomic.Int64
	observe  [outcomes][]metric.ObserveOption // nil for outcomes this package does not know
	record   [outcomes][]metric.RecordOption
}

type config struct {
	mp      metric.MeterProvider
	tp      trace.TracerProvider
	spans   bool
	withKey bool
	buckets []float64
}

// Option configures New.
type Option func(*config)

// WithMeterProvider sets the meter provider (default otel.GetMeterProvider()).
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// WithTracerProvider sets the tracer provider (default otel.GetTracerProvider()).
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithoutSpans records metrics only.
func WithoutSpans() Option { return func(c *config) { c.spans = false } }

// WithKey puts the hashed store key on spans as idem.key, and an ordered
// call's hashed order key as idem.entity (never on metrics, where they
// would make a series per call), so a trace leads to the record.
func WithKey() Option { return func(c *config) { c.withKey = true } }

// WithBuckets replaces DefaultBuckets.
func WithBuckets(b []float64) Option { return func(c *config) { c.buckets = b } }

// New creates the instruments and returns the Observer.
func New(opts ...Option) (*Observer, error) {
	c := config{spans: true, buckets: DefaultBuckets}
	for _, o := range opts {
		o(&c)
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	meter := c.mp.Meter(ScopeName)
	calls, err := meter.Int64ObservableCounter(CallsName,
		metric.WithDescription("Outcomes of idempotency-guarded calls, by function and outcome (replay rate = replayed / (executed + replayed))."),
		metric.WithUnit("{call}"))
	if err != nil {
		return nil, fmt.Errorf("idemotel: creating %s: %w", CallsName, err)
	}
	duration, err := meter.Float64Histogram(DurationName,
		metric.WithDescription("Time from the start of an idempotency-guarded call to its outcome, by function and outcome."),
		metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(c.buckets...))
	if err != nil {
		return nil, fmt.Errorf("idemotel: creating %s: %w", DurationName, err)
	}
	steps, err := meter.Int64Counter(StepsName,
		metric.WithDescription("Outcomes of the recovery points (idem.Step) of guarded calls, by function, step and outcome."),
		metric.WithUnit("{step}"))
	if err != nil {
		return nil, fmt.Errorf("idemotel: creating %s: %w", StepsName, err)
	}
	o := &Observer{calls: calls, steps: steps, duration: duration, withKey: c.withKey, other: map[otherKey]int64{}}
	if o.reg, err = meter.RegisterCallback(o.collect, calls); err != nil {
		return nil, fmt.Errorf("idemotel: registering the %s callback: %w", CallsName, err)
	}
	if c.spans {
		if c.tp == nil {
			c.tp = otel.GetTracerProvider()
		}
		o.tracer = c.tp.Tracer(ScopeName)
	}
	o.funcs = idemobs.NewFuncs(newSeries)
	return o, nil
}

// Close stops reporting idem.calls (it unregisters the collection
// callback). The Observer must not be used afterwards.
func (o *Observer) Close() error { return o.reg.Unregister() }

// Observe records e.
func (o *Observer) Observe(e idem.Event) { o.ObserveContext(context.Background(), e) }

// ObserveContext records e with the call's ctx: the span becomes a child
// of the span in ctx, and the SDK can attach exemplars from it. A Guard
// calls only Observe today; see docs/OPERATIONS.md, "Tracing".
func (o *Observer) ObserveContext(ctx context.Context, e idem.Event) {
	if e.Step != "" {
		o.steps.Add(ctx, 1, metric.WithAttributes(FuncKey.String(e.Func), StepKey.String(e.Step), OutcomeKey.String(e.Outcome.String())))
		return
	}
	fs := o.funcs.Get(e.Func)
	if i := int(e.Outcome); i < outcomes && fs.observe[i] != nil {
		fs.counts[i].Add(1)
		o.duration.Record(ctx, e.Duration.Seconds(), fs.record[i]...)
	} else {
		// An outcome newer than this package: correct, not cached.
		o.mu.Lock()
		o.other[otherKey{e.Func, e.Outcome}]++
		o.mu.Unlock()
		set := attribute.NewSet(FuncKey.String(e.Func), OutcomeKey.String(e.Outcome.String()))
		o.duration.Record(ctx, e.Duration.Seconds(), metric.WithAttributeSet(set))
	}
	if o.tracer != nil && endsCall(e.Outcome) {
		o.span(ctx, fs, e)
	}
}

// endsCall reports whether an outcome is a call's last: takeover and
// override come before the call runs, heartbeat failures while it runs.
func endsCall(oc idem.Outcome) bool {
	return oc != idem.OutcomeTakeover && oc != idem.OutcomeHeartbeatFailed && oc != idem.OutcomeOverride
}

// isError reports whether the outcome is a failure of the call, as
// opposed to a result the idempotency contract defines.
func isError(e idem.Event) bool {
	switch e.Outcome {
	case idem.OutcomeFailed, idem.OutcomeLeaseLost, idem.OutcomeStoreError, idem.OutcomeInvalidKey:
		return true
	case idem.OutcomeReplayed:
		return e.Err != nil // a recorded failure, replayed
	}
	return false
}

func (o *Observer) span(ctx context.Context, fs *funcSeries, e idem.Event) {
	end := time.Now()
	_, span := o.tracer.Start(ctx, fs.spanName, trace.WithTimestamp(end.Add(-e.Duration)),
		trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() { // sampled out or no SDK: build nothing
		var buf [6]attribute.KeyValue
		attrs := append(buf[:0], FuncKey.String(e.Func), OutcomeKey.String(e.Outcome.String()))
		if e.Fence != 0 {
			attrs = append(attrs, FenceKey.Int64(int64(e.Fence)))
		}
		if e.Reason != "" {
			attrs = append(attrs, ReasonKey.String(e.Reason))
		}
		if o.withKey && e.Key != "" {
			attrs = append(attrs, KeyKey.String(e.Key))
		}
		if o.withKey && e.Entity != "" {
			attrs = append(attrs, EntityKey.String(e.Entity))
		}
		span.SetAttributes(attrs...)
		if isError(e) {
			msg := e.Outcome.String()
			if e.Err != nil {
				msg = e.Err.Error()
				span.RecordError(e.Err, trace.WithTimestamp(end))
			}
			span.SetStatus(codes.Error, msg)
		}
	}
	span.End(trace.WithTimestamp(end))
}

// collect reports the counts when the SDK collects idem.calls.
func (o *Observer) collect(_ context.Context, obs metric.Observer) error {
	for _, fs := range o.funcs.All() {
		for i := range fs.counts {
			if fs.observe[i] != nil {
				obs.ObserveInt64(o.calls, fs.counts[i].Load(), fs.observe[i]...)
			}
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, n := range o.other {
		obs.ObserveInt64(o.calls, n, metric.WithAttributes(FuncKey.String(k.fn), OutcomeKey.String(k.outcome.String())))
	}
	return nil
}

// newSeries makes fn's measurement options.
func newSeries(fn string) *funcSeries {
	fs := &funcSeries{spanName: "idem " + fn}
	for _, oc := range knownOutcomes {
		opt := metric.WithAttributeSet(attribute.NewSet(FuncKey.String(fn), OutcomeKey.String(oc.String())))
		fs.observe[oc] = []metric.ObserveOption{opt}
		fs.record[oc] = []metric.RecordOption{opt}
	}
	return fs
}
