package notkeyed

import (
	"context"
	"testing"
	"time"

	"github.com/idemgen/idemgen/testdata/notkeyed/option"
)

func TestContextsAndOptionsAreNotIdentity(t *testing.T) {
	bg := context.Background()
	timed, cancel := context.WithTimeout(bg, time.Hour)
	defer cancel()
	a := ChargeParams{Params: Params{Context: bg, IdempotencyKey: "k1"}, Amount: 5}
	b := ChargeParams{Params: Params{Context: timed, IdempotencyKey: "k1"}, Amount: 5}
	other := ChargeParams{Params: Params{IdempotencyKey: "k2"}, Amount: 5}
	for _, tc := range []struct {
		name string
		call func(api *Idempotent, p ChargeParams, variant int) (int64, error)
	}{
		{"variadic funcs", func(api *Idempotent, p ChargeParams, v int) (int64, error) {
			return api.Charge(bg, &p, func(o *Options) { o.Region = string(rune('a' + v)) })
		}},
		{"named options", func(api *Idempotent, p ChargeParams, v int) (int64, error) {
			return api.Refund(bg, p, func(c *option.Config) { c.Retries = v }, option.Retries(v))
		}},
		{"key= and payload", func(api *Idempotent, p ChargeParams, v int) (int64, error) {
			return api.Capture(bg, p, func() {})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := NewIdempotent(newGuard(t))
			first, err := tc.call(api, a, 1)
			if err != nil {
				t.Fatal(err)
			}
			// Another context, other options: the same call.
			replay, err := tc.call(api, b, 2)
			if err != nil || replay != first {
				t.Fatalf("replay = %d, %v; want %d", replay, err, first)
			}
			// Another idempotency key is another call (or, keyed by the
			// amount only, another payload).
			if n, err := tc.call(api, other, 1); err == nil && n == first {
				t.Fatalf("another IdempotencyKey replayed %d", n)
			}
		})
	}
}
