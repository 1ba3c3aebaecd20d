package idem_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// payments stands for a payments API that deduplicates by an
// Idempotency-Key header, as Stripe's and Adyen's do.
type payments struct{ charges map[string]string }

func (p *payments) Charge(ctx context.Context, idempotencyKey string, cents int64) (string, error) {
	if id, ok := p.charges[idempotencyKey]; ok {
		return id, nil // the API's own replay
	}
	id := fmt.Sprintf("ch_%d", len(p.charges)+1)
	p.charges[idempotencyKey] = id
	return id, nil
}

var errMailer = errors.New("mailer down")

// A call with two side effects, charge then email. The first run charges
// the card and fails to send the email; the retry finds the charge recorded
// and does not charge again. StepKey is the charge's Idempotency-Key, so
// even a charge whose owner died before recording it is not repeated by
// the payments API.
func ExampleStep() {
	api := &payments{charges: map[string]string{}}
	g := idem.NewGuard(memstore.New())
	spec := &idem.Spec{Name: "example.com/billing.Checkout"}
	mailerUp := false

	checkout := func(ctx context.Context, orderID string) (string, error) {
		c := g.Begin(spec, orderID)
		return idem.Do(ctx, c, func(ctx context.Context) (string, error) {
			charge, err := idem.Step(ctx, "charge", func(ctx context.Context) (string, error) {
				key, err := idem.StepKey(ctx, "charge")
				if err != nil {
					return "", err
				}
				fmt.Println("charging the card")
				return api.Charge(ctx, key, 4200)
			})
			if err != nil {
				return "", err
			}
			_, err = idem.Step(ctx, "email", func(ctx context.Context) (struct{}, error) {
				if !mailerUp {
					return struct{}{}, errMailer
				}
				fmt.Println("sending the receipt for", charge)
				return struct{}{}, nil
			})
			return charge, err
		})
	}

	_, err := checkout(context.Background(), "order-1")
	fmt.Println("first run:", err)
	mailerUp = true
	charge, err := checkout(context.Background(), "order-1")
	fmt.Println("retry:", charge, err, "- charges made:", len(api.charges))
	// Output:
	// charging the card
	// first run: mailer down
	// sending the receipt for ch_1
	// retry: ch_1 <nil> - charges made: 1
}
