package maxresult

import (
	"context"
	"errors"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
)

// A report within 1KiB replays; one over it is recorded as failed with
// ErrResultTooLarge: its first caller still gets it, a duplicate gets the
// recorded failure, and it is never built again.
func TestBudget(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	if r, err := api.Build(ctx, "small", 100); err != nil || len(r.Body) != 100 {
		t.Fatalf("small report: %d bytes, %v", len(r.Body), err)
	}
	if r, err := api.Build(ctx, "small", 100); err != nil || len(r.Body) != 100 {
		t.Fatalf("small report's replay: %d bytes, %v", len(r.Body), err)
	}
	r, err := api.Build(ctx, "big", 4096)
	if len(r.Body) != 4096 || !errors.Is(err, idem.ErrResultTooLarge) {
		t.Fatalf("big report: %d bytes, %v; want it and ErrResultTooLarge", len(r.Body), err)
	}
	var rec *idem.RecordedError
	if _, err := api.Build(ctx, "big", 4096); !errors.As(err, &rec) || !errors.Is(err, idem.ErrResultTooLarge) {
		t.Errorf("big report's duplicate: %v, want the recorded ErrResultTooLarge", err)
	}
	if n := builds.Load(); n != 2 {
		t.Errorf("built %d times, want 2 (small once, big once)", n)
	}
}
