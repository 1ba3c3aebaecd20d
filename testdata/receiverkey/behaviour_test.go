package receiverkey

import (
	"context"
	"testing"
)

func TestReceiverKey(t *testing.T) {
	ctx := context.Background()
	g := newGuard(t)
	a := NewIdempotentTenant(&Tenant{ID: "a", region: "eu"}, g)
	a2 := NewIdempotentTenant(&Tenant{ID: "a", region: "us"}, g)
	b := NewIdempotentTenant(&Tenant{ID: "b", region: "eu"}, g)
	tests := []struct {
		name string
		call func() (string, error)
		want string
	}{
		{"first", func() (string, error) { return a.Bill(ctx, 100) }, "a/eu:100#1"},
		{"replay", func() (string, error) { return a.Bill(ctx, 100) }, "a/eu:100#1"},
		{"another tenant, same amount", func() (string, error) { return b.Bill(ctx, 100) }, "b/eu:100#2"},
		{"same tenant ID, another unexported region", func() (string, error) { return a2.Bill(ctx, 100) }, "a/us:100#3"},
		{"notify, first", func() (string, error) { return a.Notify(ctx, "hi") }, "a:hi#4"},
		{"notify from another tenant: the receiver is not keyed", func() (string, error) { return b.Notify(ctx, "hi") }, "a:hi#4"},
	}
	for _, tt := range tests {
		got, err := tt.call()
		if err != nil || got != tt.want {
			t.Fatalf("%s: got %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}
