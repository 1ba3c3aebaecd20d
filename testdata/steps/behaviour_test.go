package steps

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/idemgen/idemgen/runtime/idem"
)

// A retry after the email failed replays the recorded charge (through its
// generated codec) and runs only the email.
func TestCheckoutResumes(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	mailerDown.Store(true)
	if _, err := api.Checkout(ctx, "o1", "4242", 900); err == nil || err.Error() != "mailer down" {
		t.Fatalf("first run: %v, want the mailer's error", err)
	}
	if charges.Load() != 1 || emails.Load() != 0 {
		t.Fatalf("after the first run: %d charges, %d emails; want 1, 0", charges.Load(), emails.Load())
	}
	mailerDown.Store(false)
	got, err := api.Checkout(ctx, "o1", "4242", 900)
	if err != nil {
		t.Fatal(err)
	}
	want := Charge{ID: "ch_1", Cents: 900, Tags: []string{"4242"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resumed checkout (-want +got):\n%s", diff)
	}
	if charges.Load() != 1 || emails.Load() != 1 {
		t.Errorf("after the retry: %d charges, %d emails; want 1, 1", charges.Load(), emails.Load())
	}
}

// A step wrapper outside a guarded call is an error, and its function does
// not run.
func TestStepOutsideCall(t *testing.T) {
	before := charges.Load()
	if _, err := ChargeCardStep(context.Background(), "4242", 1); !errors.Is(err, idem.ErrStep) {
		t.Errorf("ChargeCardStep outside a call: %v, want ErrStep", err)
	}
	if charges.Load() != before {
		t.Error("the step's function ran outside a guarded call")
	}
}
