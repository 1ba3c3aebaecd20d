package methods

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
)

func TestMethods(t *testing.T) {
	ctx := context.Background()
	g := newGuard(t)
	svc := &Service{Prefix: "ch_", charged: new(atomic.Int64)}
	var p Payments = NewIdempotentService(svc, g) // still a Payments
	for i := 0; i < 3; i++ {
		id, err := p.Charge(ctx, "acct", 100)
		if err != nil || id != "ch_acct" {
			t.Fatalf("charge: %q %v", id, err)
		}
	}
	if n := p.Balance("acct"); n != 1 {
		t.Fatalf("charged %d times, want 1", n)
	}
	w := NewIdempotentService(svc, g)
	if err := w.Refund(ctx, "ch_1"); err != nil {
		t.Fatal(err)
	}
	if err := w.Refund(ctx, "ch_1"); !errors.Is(err, idem.ErrDuplicate) {
		t.Fatalf("on_duplicate=raise: got %v, want ErrDuplicate", err)
	}
	m := NewIdempotentMailer(&Mailer{}, g)
	m.Send(ctx, "a")
	m.Send(ctx, "a")
	if n := m.sent.Load(); n != 1 {
		t.Fatalf("sent %d times", n)
	}
}
