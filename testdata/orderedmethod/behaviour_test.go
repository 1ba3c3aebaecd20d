package orderedmethod

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
)

func TestMethodOrder(t *testing.T) {
	ctx := context.Background()
	l := NewIdempotentLedger(&Ledger{}, newGuard(t))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := l.Post(ctx, 1, t0, 100); err != nil {
		t.Fatal(err)
	}
	// on_duplicate=raise: a duplicate is ErrDuplicate, never an ordering error.
	if _, err := l.Post(ctx, 1, t0, 100); !errors.Is(err, idem.ErrDuplicate) {
		t.Errorf("duplicate: %v", err)
	}
	if _, err := l.Post(ctx, 1, t0.Add(-90*time.Second), 5); err != nil {
		t.Errorf("inside grace=90s: %v", err)
	}
	if _, err := l.Post(ctx, 1, t0.Add(-91*time.Second), 5); !errors.Is(err, idem.ErrOutOfOrder) {
		t.Errorf("beyond grace: %v", err)
	}
	if _, err := l.Post(ctx, 2, t0.Add(-time.Hour), 5); err != nil {
		t.Errorf("other account: %v", err)
	}
	// The wrapper still satisfies what *Ledger does.
	var _ interface {
		Post(context.Context, int64, time.Time, int64) (int, error)
	} = l
}
