package basic

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/idemgen/idemgen/runtime/idem"
)

func TestCreateInvoice(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	price := 2.5
	req := InvoiceRequest{CustomerID: "c1", OrderID: "o1", Amount: 100, Due: time.Unix(1e9, 0),
		Lines: []Line{{SKU: "a", Qty: 2, Price: &price}}, Meta: map[string]string{"k": "v"}}

	// A wait-mode storm: one execution, everyone gets its result.
	errs := storm(16, func() error {
		_, err := api.CreateInvoice(ctx, req)
		return err
	})
	for _, err := range errs {
		if err != nil {
			t.Fatalf("storm: %v", err)
		}
	}
	if n := executions.Load(); n != 1 {
		t.Fatalf("executed %d times, want 1", n)
	}
	first, err := CreateInvoice(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	replay, err := api.CreateInvoice(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, replay); diff != "" {
		t.Errorf("replay differs: %s", diff)
	}
	// Same key (customer, order), different payload: a mismatch, not a replay.
	other := req
	other.Amount = 200
	if _, err := api.CreateInvoice(ctx, other); !errors.Is(err, idem.ErrPayloadMismatch) {
		t.Errorf("changed payload: got %v, want ErrPayloadMismatch", err)
	}
	// Hook is tagged idem:"-": it is not part of the payload.
	hooked := req
	hooked.Hook = func() {}
	if _, err := api.CreateInvoice(ctx, hooked); err != nil {
		t.Errorf("idem:\"-\" field changed the payload: %v", err)
	}
	// Another order is another key.
	next := req
	next.OrderID = "o2"
	if _, err := api.CreateInvoice(ctx, next); err != nil {
		t.Fatal(err)
	}
	if n := executions.Load(); n != 3 { // storm + direct call + o2
		t.Errorf("executed %d times, want 3", n)
	}
}
