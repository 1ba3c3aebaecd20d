package keybasic

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
)

func TestBasicKinds(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	b := Basics{B: true, I: -1, I8: 2, U64: math.MaxUint64, F64: 1.5, C64: 1 + 2i, S: "s", R: 'r', D: time.Second, T: time.Unix(5, 6), Amt: 10, Cur: "EUR", Rat: 0.5}
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	a, _ := api.Record(ctx, b, 1, 0, "USD", time.Minute, at)
	// The same instant in another zone, -0 for 0: the same key.
	zone := time.FixedZone("X", 3600)
	c, _ := api.Record(ctx, b, 1, math.Copysign(0, -1), "USD", time.Minute, at.In(zone))
	if a != c || runs.Load() != 1 {
		t.Fatalf("same call twice ran %d times", runs.Load())
	}
	// Each field is part of the key.
	mods := []func(*Basics){
		func(b *Basics) { b.B = false }, func(b *Basics) { b.I8++ }, func(b *Basics) { b.U16++ },
		func(b *Basics) { b.F32 = 1 }, func(b *Basics) { b.C128 = 1i }, func(b *Basics) { b.S = "t" },
		func(b *Basics) { b.D++ }, func(b *Basics) { b.T = b.T.Add(1) }, func(b *Basics) { b.Amt++ },
		func(b *Basics) { b.Cur = "GBP" }, func(b *Basics) { b.Fl = true }, func(b *Basics) { b.UP = 1 },
	}
	for i, m := range mods {
		bb := b
		m(&bb)
		api.Record(ctx, bb, 1, 0, "USD", time.Minute, at)
		if n := runs.Load(); n != int64(i+2) {
			t.Fatalf("modification %d did not change the key", i)
		}
	}
	if _, err := api.Record(ctx, b, 1, math.NaN(), "USD", 0, at); !errors.Is(err, idem.ErrInvalidKey) {
		t.Errorf("NaN: got %v, want ErrInvalidKey", err)
	}
}
