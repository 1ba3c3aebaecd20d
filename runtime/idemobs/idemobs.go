// Package idemobs combines idem observers.
//
// A Guard takes one Observer (idem.WithObserver). To log, count and trace
// the same outcomes, fan out with Multi:
//
//	obs, err := idemprom.New(prometheus.DefaultRegisterer)
//	...
//	g := idem.NewGuard(store, idem.WithObserver(idemobs.Multi(
//		idemslog.New(logger),
//		obs,
//	)))
//
// StaleScanner counts a store's stale claims (stuck locks, which no event
// reports); the stale-claim gauges of runtime/idemprom and runtime/idemotel
// export its result. Funcs is the per-function cache an observer keeps its
// series in, so an event costs a lookup and no allocation.
//
// The adapters live in their own packages (runtime/idemslog,
// runtime/idemprom, runtime/idemotel) so that runtime/idem and this package
// depend on the standard library only.
package idemobs

import (
	"context"

	"github.com/idemgen/idemgen/runtime/idem"
)

// Multi returns an Observer that hands every event to each of obs in
// order. Nil observers are skipped and nested Multis are flattened, so the
// fan-out is one loop however it was composed. With no observers left it
// returns nil, which idem.WithObserver treats as "no observer" (the Guard
// then does not even build events); with one it returns that observer.
//
// Observers run synchronously on the caller's goroutine: a slow one slows
// every guarded call, and a panicking one panics the call.
func Multi(obs ...idem.Observer) idem.Observer {
	var flat multi
	for _, o := range obs {
		switch o := o.(type) {
		case nil:
		case multi:
			flat = append(flat, o...)
		default:
			flat = append(flat, o)
		}
	}
	switch len(flat) {
	case 0:
		return nil
	case 1:
		return flat[0]
	}
	return flat
}

type multi []idem.Observer

func (m multi) Observe(e idem.Event) {
	for _, o := range m {
		o.Observe(e)
	}
}

// contextObserver is an observer that also takes the call's ctx (the
// adapters in this repository are: they parent spans and log with the
// caller's trace when given one).
type contextObserver interface {
	ObserveContext(ctx context.Context, e idem.Event)
}

// ObserveContext hands e with ctx to the observers that take a ctx and e
// alone to the others, so a Multi loses nothing its members can use.
func (m multi) ObserveContext(ctx context.Context, e idem.Event) {
	for _, o := range m {
		if co, ok := o.(contextObserver); ok {
			co.ObserveContext(ctx, e)
		} else {
			o.Observe(e)
		}
	}
}
