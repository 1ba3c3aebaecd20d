package idemotel_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemobs/obstest"
	"github.com/idemgen/idemgen/runtime/idemotel"
)

// BenchmarkReplayObserved: a memory-store replay observed by the OTel SDK
// (metrics only, then metrics and a span per call through a batching
// processor with a no-op exporter) against the same replay unobserved.
func BenchmarkReplayObserved(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	b.Run("metrics", func(b *testing.B) {
		obs, err := idemotel.New(idemotel.WithMeterProvider(mp), idemotel.WithoutSpans())
		if err != nil {
			b.Fatal(err)
		}
		obstest.BenchReplay(b, obs)
	})
	b.Run("metrics_spans", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		defer func() { _ = tp.Shutdown(context.Background()) }()
		obs, err := idemotel.New(idemotel.WithMeterProvider(mp), idemotel.WithTracerProvider(tp))
		if err != nil {
			b.Fatal(err)
		}
		obstest.BenchReplay(b, obs)
	})
}

// BenchmarkObserve is the observer alone (metrics only) for one function
// and outcome; most of it is the SDK's per-measurement attribute handling.
func BenchmarkObserve(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	obs, err := idemotel.New(idemotel.WithMeterProvider(mp), idemotel.WithoutSpans())
	if err != nil {
		b.Fatal(err)
	}
	e := idem.Event{Func: "shop.Charge", Outcome: idem.OutcomeReplayed, Fence: 1, Duration: 3 * time.Microsecond}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		obs.Observe(e)
	}
}
