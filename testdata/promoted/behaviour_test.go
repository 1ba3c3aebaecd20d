package promoted

import (
	"context"
	"errors"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/idemgen/idemgen/runtime/idem"
)

func TestPromotedMethodsDoNotStandForTheStruct(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	base := func() (Stamped, Money, Request) {
		return Stamped{at, "order-1"}, Money{NewDecimal(1000), "USD"}, Request{Tenant{"t1"}, "item-1"}
	}
	tests := []struct {
		name   string
		change func(*Stamped, *Money, *Request)
		same   bool
	}{
		{"same call", func(*Stamped, *Money, *Request) {}, true},
		{"same instant in another zone", func(s *Stamped, _ *Money, _ *Request) { s.Time = at.In(time.FixedZone("x", 3600)) }, true},
		{"other order, same time", func(s *Stamped, _ *Money, _ *Request) { s.Order = "order-2" }, false},
		{"other time, same order", func(s *Stamped, _ *Money, _ *Request) { s.Time = at.Add(time.Nanosecond) }, false},
		{"other currency, same amount", func(_ *Stamped, m *Money, _ *Request) { m.Currency = "EUR" }, false},
		{"other amount", func(_ *Stamped, m *Money, _ *Request) { m.Decimal = NewDecimal(1001) }, false},
		{"other item, same tenant", func(_ *Stamped, _ *Money, r *Request) { r.Item = "item-2" }, false},
		{"other tenant", func(_ *Stamped, _ *Money, r *Request) { r.Tenant.ID = "t2" }, false},
	}
	api := NewIdempotent(newGuard(t))
	s0, m0, r0 := base()
	k0, err := api.ChargeKey(s0, m0, r0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, m, r := base()
			tt.change(&s, &m, &r)
			k, err := api.ChargeKey(s, m, r)
			if err != nil {
				t.Fatal(err)
			}
			if (k == k0) != tt.same {
				t.Errorf("same key = %v, want %v", k == k0, tt.same)
			}
		})
	}
}

// A replay keeps the outer struct's own fields, through the stored bytes
// (memory store with a JSON round trip, and Redis when it runs).
func TestPromotedResultsReplayWhole(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	for _, g := range guards(t) {
		t.Run(g.store, func(t *testing.T) {
			api := NewIdempotent(g.g)
			ctx := context.Background()
			s, m, r := Stamped{at, "order-1"}, Money{NewDecimal(1050), "EUR"}, Request{Tenant{"t1"}, "i"}
			first, err := api.Charge(ctx, s, m, r)
			if err != nil {
				t.Fatal(err)
			}
			again, err := api.Charge(ctx, s, m, r)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(first, again, cmp.AllowUnexported(Decimal{})); diff != "" {
				t.Errorf("replay differs (-first +replay):\n%s", diff)
			}
			if again.Order != "order-1" || again.Total.Currency != "EUR" {
				t.Errorf("replay lost the outer fields: %+v", again)
			}
		})
	}
}

func TestNilOnKeyPathIsItsOwnValue(t *testing.T) {
	api := NewIdempotent(newGuard(t))
	guest, err := api.PlaceKey(Order{ID: "o-1"})
	if err != nil {
		t.Fatal(err)
	}
	// The nil marker was once the varint of 55.
	for _, id := range []int64{55, 0, -1, 110} {
		k, err := api.PlaceKey(Order{ID: "o-1", Customer: &Customer{ID: id}})
		if err != nil {
			t.Fatal(err)
		}
		if k == guest {
			t.Errorf("a guest order and customer %d's order share the key %s", id, k)
		}
	}
}

func TestCyclicKeyIsInvalid(t *testing.T) {
	api := NewIdempotent(newGuard(t))
	a := &Node{Name: "a"}
	a.Next = &Node{Name: "b", Next: a}
	before := runs.Load()
	if _, err := api.Visit(context.Background(), a); !errors.Is(err, idem.ErrInvalidKey) {
		t.Fatalf("cyclic key: err = %v, want ErrInvalidKey", err)
	}
	if runs.Load() != before {
		t.Fatal("the function ran on an invalid key")
	}
	// A long but finite chain is a key like any other.
	var n *Node
	for range 1000 {
		n = &Node{Name: "x", Next: n}
	}
	if _, err := api.Visit(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

func TestMarshaledKeysKeepIdentity(t *testing.T) {
	api := NewIdempotent(newGuard(t))
	tenth := func(prec uint) *big.Float {
		return new(big.Float).SetPrec(prec).Quo(big.NewFloat(1), big.NewFloat(10))
	}
	one := func(prec uint) *big.Float { return new(big.Float).SetPrec(prec).SetInt64(1) }
	ip := net.IPv4(10, 0, 0, 1)
	tests := []struct {
		name   string
		ip1    net.IP
		a1     *big.Float
		ip2    net.IP
		a2     *big.Float
		shared bool
	}{
		{"nil and empty address", nil, one(53), net.IP{}, one(53), false},
		{"4- and 16-byte forms of one address", ip.To4(), one(53), ip.To16(), one(53), true},
		{"0.1 at 53 and at 64 bits", ip, tenth(53), ip, tenth(64), false},
		{"1 at 53 and at 64 bits", ip, one(53), ip, one(64), true},
		{"nil and zero amount", ip, nil, ip, new(big.Float), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k1, err := api.RouteKey(tt.ip1, tt.a1)
			if err != nil {
				t.Fatal(err)
			}
			k2, err := api.RouteKey(tt.ip2, tt.a2)
			if err != nil {
				t.Fatal(err)
			}
			if (k1 == k2) != tt.shared {
				t.Errorf("shared key = %v, want %v", k1 == k2, tt.shared)
			}
		})
	}
}
