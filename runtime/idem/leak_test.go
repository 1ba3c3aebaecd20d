package idem_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// No Event carries a call's arguments or results, so no observer (logs,
// metrics, traces) can leak them: docs/SECURITY.md, "Log leakage".
func TestEventsCarryNoPayload(t *testing.T) {
	const secret = "4111-1111-1111-1111"
	var mu sync.Mutex
	var seen []string
	obs := idem.ObserverFunc(func(e idem.Event) {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%+v %v", e, e.Err))
		mu.Unlock()
	})
	g := idem.NewGuard(memstore.New(), idem.WithObserver(obs))
	spec := &idem.Spec{Name: "leak.Charge", OnFailure: idem.FailureLock}
	ctx := context.Background()
	for _, fail := range []bool{false, true, true} {
		c := g.Begin(spec, secret)
		_, _ = idem.Do(ctx, c, func(ctx context.Context) (string, error) {
			if _, err := idem.Step(ctx, "card", func(context.Context) (string, error) { return "card " + secret, nil }); err != nil {
				return "", err
			}
			if fail {
				return "", errors.New("declined")
			}
			return "receipt " + secret, nil
		})
		spec = &idem.Spec{Name: "leak.Charge2", OnFailure: idem.FailureLock}
	}
	if len(seen) == 0 {
		t.Fatal("no events")
	}
	for _, s := range seen {
		if strings.Contains(s, secret) {
			t.Errorf("an event carries the payload: %s", s)
		}
	}
}
