package idemslog_test

import (
	"log/slog"
	"os"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemslog"
)

func ExampleNew() {
	h := slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // keep the example's output stable
			}
			return a
		},
	})
	obs := idemslog.New(slog.New(h), idemslog.WithKey())
	// g := idem.NewGuard(store, idem.WithObserver(obs)); here, one event by hand:
	obs.Observe(idem.Event{Func: "shop.Charge", Outcome: idem.OutcomeLeaseLost, Key: "idem:shop.Charge:v0:9f86d0",
		Fence: 4, Duration: 31 * time.Second, Err: idem.ErrLeaseLost})
	obs.Observe(idem.Event{Func: "shop.Charge", Outcome: idem.OutcomeReplayed, Fence: 4}) // Debug: not logged
	// Output:
	// {"level":"ERROR","msg":"idem lease_lost","func":"shop.Charge","outcome":"lease_lost","fence":4,"duration":31000000000,"err":"idem: lease lost","key":"idem:shop.Charge:v0:9f86d0"}
}
