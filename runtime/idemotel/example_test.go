package idemotel_test

import (
	"context"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemotel"
	"github.com/idemgen/idemgen/runtime/memstore"
)

func ExampleNew() {
	// In a service: the providers set up with your exporters.
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))

	obs, err := idemotel.New(idemotel.WithMeterProvider(mp), idemotel.WithTracerProvider(tp))
	if err != nil {
		panic(err)
	}
	defer obs.Close()
	g := idem.NewGuard(memstore.New(), idem.WithObserver(obs))

	spec := &idem.Spec{Name: "shop.Charge"}
	for range 2 {
		c, k := idemimpl.Begin(g, spec)
		k.Key().ID("order-1")
		_, _ = idem.Do(context.Background(), c, func(context.Context) (string, error) { return "receipt-1", nil })
	}

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			for _, dp := range sum.DataPoints {
				if dp.Value > 0 {
					oc, _ := dp.Attributes.Value(idemotel.OutcomeKey)
					fmt.Println(m.Name, oc.AsString(), dp.Value)
				}
			}
		}
	}
	for _, s := range spans.Ended() {
		fmt.Println("span:", s.Name())
	}
	// Unordered output:
	// idem.calls executed 1
	// idem.calls replayed 1
	// span: idem shop.Charge
	// span: idem shop.Charge
}
