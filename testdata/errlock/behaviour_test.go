package errlock

import (
	"context"
	"errors"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
)

func TestErrorOnly(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	for i := 0; i < 3; i++ {
		if err := api.SendEmail(ctx, "a@example.com", "hi"); err != nil {
			t.Fatal(err)
		}
	}
	if n := sends.Load(); n != 1 {
		t.Fatalf("sent %d times, want 1", n)
	}
	// on_failure=lock: the failure is recorded; duplicates get it replayed.
	err := api.SendEmail(ctx, "", "hi")
	if err == nil || err.Error() != "no recipient" {
		t.Fatalf("first failure: %v", err)
	}
	err = api.SendEmail(ctx, "", "hi")
	var rec *idem.RecordedError
	if !errors.As(err, &rec) || rec.Message != "no recipient" {
		t.Fatalf("replayed failure: got %v, want a RecordedError", err)
	}
	if n := sends.Load(); n != 2 {
		t.Fatalf("sent %d times, want 2", n)
	}
	// on_failure=unlock: each retry runs again.
	for i := 0; i < 2; i++ {
		if err := api.Charge(ctx, "acct", 5000); !errors.Is(err, ErrDeclined) {
			t.Fatalf("charge: %v", err)
		}
	}
	if n := charges.Load(); n != 2 {
		t.Fatalf("charged %d times, want 2 (unlock lets retries run)", n)
	}
}
