// Package steps has recovery points: a guarded checkout whose side effects
// are generated step wrappers, so a retry after a failure runs only what
// did not complete.
package steps

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
)

// Charge is a card charge.
type Charge struct {
	ID    string
	Cents int64
	Tags  []string
}

var (
	charges, emails atomic.Int64
	mailerDown      atomic.Bool
)

// ChargeCard charges the card.
//
//idem:step name=charge
func ChargeCard(ctx context.Context, card string, cents int64) (Charge, error) {
	n := charges.Add(1)
	return Charge{ID: fmt.Sprintf("ch_%d", n), Cents: cents, Tags: []string{card}}, nil
}

// Mailer sends receipts.
type Mailer struct{ From string }

// Send emails the receipt of ch.
//
//idem:step
func (m *Mailer) Send(ctx context.Context, to string, ch Charge) error {
	if mailerDown.Load() {
		return errors.New("mailer down")
	}
	emails.Add(1)
	return nil
}

var mailer = &Mailer{From: "shop@example.com"}

// Checkout charges the card, then emails the receipt.
//
//idem:key=order
func Checkout(ctx context.Context, order, card string, cents int64) (Charge, error) {
	ch, err := ChargeCardStep(ctx, card, cents)
	if err != nil {
		return Charge{}, err
	}
	if err := mailer.SendStep(ctx, order+"@example.com", ch); err != nil {
		return Charge{}, err
	}
	return ch, nil
}
