package idemprom_test

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemprom"
	"github.com/idemgen/idemgen/runtime/memstore"
)

func ExampleNew() {
	reg := prometheus.NewRegistry() // prometheus.DefaultRegisterer in a service
	obs, err := idemprom.New(reg)
	if err != nil {
		panic(err)
	}
	g := idem.NewGuard(memstore.New(), idem.WithObserver(obs))

	spec := &idem.Spec{Name: "shop.Charge"}
	for range 3 {
		c, k := idemimpl.Begin(g, spec)
		k.Key().ID("order-1")
		_, _ = idem.Do(context.Background(), c, func(context.Context) (string, error) { return "receipt-1", nil })
	}

	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := m.GetLabel()
			switch {
			case mf.GetName() == "idem_calls_total" && m.GetCounter().GetValue() > 0:
				fmt.Printf("%s{func=%q,outcome=%q} %v\n", mf.GetName(), l[0].GetValue(), l[1].GetValue(), m.GetCounter().GetValue())
			case mf.GetName() == "idem_call_duration_seconds":
				fmt.Printf("%s_count{func=%q,outcome=%q} %v\n", mf.GetName(), l[0].GetValue(), l[1].GetValue(), m.GetHistogram().GetSampleCount())
			}
		}
	}
	// Output:
	// idem_call_duration_seconds_count{func="shop.Charge",outcome="executed"} 1
	// idem_call_duration_seconds_count{func="shop.Charge",outcome="replayed"} 2
	// idem_calls_total{func="shop.Charge",outcome="executed"} 1
	// idem_calls_total{func="shop.Charge",outcome="replayed"} 2
}
