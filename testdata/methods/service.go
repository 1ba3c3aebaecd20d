// Package methods: annotated methods with pointer and value receivers on
// two types; IdempotentT embeds *T, so it still satisfies T's interfaces.
package methods

import (
	"context"
	"sync/atomic"
)

// Payments is the interface callers depend on.
type Payments interface {
	Charge(ctx context.Context, account string, cents int64) (string, error)
	Balance(account string) int64
}

type Service struct {
	Prefix  string
	charged *atomic.Int64
}

var _ Payments = (*Service)(nil)

// Charge is guarded.
//
//idem:key=account,cents
func (s *Service) Charge(ctx context.Context, account string, cents int64) (string, error) {
	s.charged.Add(1)
	return s.Prefix + account, nil
}

// Refund has a value receiver.
//
//idem:on_duplicate=raise
func (s Service) Refund(ctx context.Context, chargeID string) error { return nil }

// Balance is not annotated: IdempotentService promotes it from *Service.
func (s *Service) Balance(account string) int64 { return s.charged.Load() }

type Mailer struct{ sent atomic.Int64 }

// Send is a method of another type: another wrapper type.
//
//idem:on_duplicate=return
func (m *Mailer) Send(ctx context.Context, to string) error {
	m.sent.Add(1)
	return nil
}
