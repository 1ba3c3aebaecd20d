package keymarshal

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/testdata/keymarshal/money"
)

func charge() Charge {
	b := money.NewToken(2, 0)
	return Charge{Amount: money.New(100, "EUR"), Token: money.NewToken(1, 0), Backup: &b,
		Prices: map[string]money.Amount{"a": money.New(1, "EUR")}}
}

func TestMarshalerKeys(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	label := netip.MustParseAddr("10.0.0.1")
	api.Pay(ctx, charge(), label)
	// What the marshalers leave out is not part of the key.
	c := charge()
	c.Token = money.NewToken(1, 7)
	api.Pay(ctx, c, label)
	if n := runs.Load(); n != 1 {
		t.Fatalf("same marshaled bytes ran %d times", n)
	}
	mods := []func(*Charge){
		func(c *Charge) { c.Amount = money.New(101, "EUR") },
		func(c *Charge) { c.Amount = money.New(100, "USD") },
		func(c *Charge) { c.Token = money.NewToken(9, 0) },
		func(c *Charge) { c.Backup = nil },
		func(c *Charge) { c.Prices["a"] = money.New(2, "EUR") },
	}
	for i, m := range mods {
		c := charge()
		m(&c)
		api.Pay(ctx, c, label)
		if n := runs.Load(); n != int64(i+2) {
			t.Fatalf("modification %d did not change the key", i)
		}
	}
	api.Pay(ctx, charge(), nil) // a nil interface is a key of its own
	if n := runs.Load(); n != int64(len(mods)+2) {
		t.Fatalf("nil label: ran %d times", n)
	}
	bad := charge()
	bad.Amount = money.New(1, "")
	if _, err := api.Pay(ctx, bad, label); !errors.Is(err, idem.ErrInvalidKey) {
		t.Errorf("failing MarshalText: got %v, want ErrInvalidKey", err)
	}
}
