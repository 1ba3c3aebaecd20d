package idemobs_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemobs"
	"github.com/idemgen/idemgen/runtime/idemslog"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// Two observers behind one Guard: a log and an in-process tally.
func ExampleMulti() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == idemslog.DurationKey {
				return slog.Attr{} // keep the example's output stable
			}
			return a
		},
	}))
	replays := 0
	g := idem.NewGuard(memstore.New(), idem.WithObserver(idemobs.Multi(
		idemslog.New(logger, idemslog.WithSuccessLevel(slog.LevelInfo)),
		idem.ObserverFunc(func(e idem.Event) {
			if e.Outcome == idem.OutcomeReplayed {
				replays++
			}
		}),
	)))
	spec := &idem.Spec{Name: "shop.Charge"}
	for range 2 {
		c, k := idemimpl.Begin(g, spec)
		k.Key().ID("order-1")
		_, _ = idem.Do(context.Background(), c, func(context.Context) (string, error) { return "receipt-1", nil })
	}
	fmt.Println("replays:", replays)
	// Output:
	// level=INFO msg="idem executed" func=shop.Charge outcome=executed fence=1
	// level=INFO msg="idem replayed" func=shop.Charge outcome=replayed fence=1
	// replays: 1
}
