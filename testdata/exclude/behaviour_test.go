package exclude

import (
	"context"
	"testing"
	"time"
)

func TestExclude(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	o := Order{ID: "o1", Customer: &Customer{ID: "c1", UpdatedAt: time.Unix(1, 0)}, Trace: Trace{SpanID: "s", Sent: time.Unix(2, 0)}, Attempt: 1}
	a, _ := api.Fulfil(ctx, o, Delivery{Broker: "b1", Redelivs: 0})
	o2 := o
	o2.Customer = &Customer{ID: "c1", UpdatedAt: time.Unix(99, 0)}
	o2.Trace.Sent = time.Unix(100, 0)
	o2.Attempt = 7
	b, _ := api.Fulfil(ctx, o2, Delivery{Broker: "b2", Redelivs: 3})
	if a != b || runs.Load() != 1 {
		t.Fatalf("excluded fields changed the key: %d %d", a, b)
	}
	o3 := o
	o3.Trace.SpanID = "other" // not excluded
	api.Fulfil(ctx, o3, Delivery{})
	o4 := o
	o4.Customer = nil // nil pointer is its own key
	api.Fulfil(ctx, o4, Delivery{})
	if n := runs.Load(); n != 3 {
		t.Fatalf("ran %d times, want 3", n)
	}
}
