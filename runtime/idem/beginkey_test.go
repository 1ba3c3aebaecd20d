package idem_test

import (
	"math"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// TestBeginKeysAsGeneratedCode: a hand-written call keyed by a value of a
// builtin basic type gets the store key a generated wrapper annotated
// key=<that parameter> gets, so the two share their records (and idemctl
// finds a hand call's record by the key a user typed). Other values keep
// Any's rules, which tell a named type from its underlying one.
func TestBeginKeysAsGeneratedCode(t *testing.T) {
	g := idem.NewGuard(memstore.New())
	spec := idem.Spec{Name: "test.BeginKey", TTL: time.Hour}
	generated := func(write func(b *idemimpl.KeyBuilder)) string {
		c, m := idemimpl.Begin(g, &spec)
		write(m.Key())
		k, err := c.StoreKey()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	type orderID string
	tests := []struct {
		name  string
		key   any
		write func(b *idemimpl.KeyBuilder)
		same  bool
	}{
		{"string", "a", func(b *idemimpl.KeyBuilder) { b.String("a") }, true},
		{"empty string", "", func(b *idemimpl.KeyBuilder) { b.String("") }, true},
		{"int", 42, func(b *idemimpl.KeyBuilder) { b.Int(42) }, true},
		{"int8", int8(-3), func(b *idemimpl.KeyBuilder) { b.Int(-3) }, true},
		{"int64", int64(1 << 40), func(b *idemimpl.KeyBuilder) { b.Int(1 << 40) }, true},
		{"uint16", uint16(7), func(b *idemimpl.KeyBuilder) { b.Uint(7) }, true},
		{"uint64", uint64(1 << 63), func(b *idemimpl.KeyBuilder) { b.Uint(1 << 63) }, true},
		{"bool", true, func(b *idemimpl.KeyBuilder) { b.Bool(true) }, true},
		{"float32", float32(0.1), func(b *idemimpl.KeyBuilder) { b.Float(float64(float32(0.1))) }, true},
		{"float64", 2.5, func(b *idemimpl.KeyBuilder) { b.Float(2.5) }, true},
		{"bytes", []byte("xy"), func(b *idemimpl.KeyBuilder) { b.Bytes([]byte("xy")) }, true},
		{"nil bytes", []byte(nil), func(b *idemimpl.KeyBuilder) { b.Nil() }, true},
		{"named string keeps its type", orderID("a"), func(b *idemimpl.KeyBuilder) { b.String("a") }, false},
		{"list keeps Any's rules", []any{"a"}, func(b *idemimpl.KeyBuilder) { b.String("a") }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hand, err := g.Begin(&spec, tt.key).StoreKey()
			if err != nil {
				t.Fatal(err)
			}
			if gen := generated(tt.write); (hand == gen) != tt.same {
				t.Errorf("Begin(%#v) store key %q, generated %q: same = %v, want %v", tt.key, hand, gen, hand == gen, tt.same)
			}
		})
	}
}

// FuzzBeginKeysAsGeneratedCode: for every value of the predeclared types
// a generated wrapper writes directly, Begin's store key is the
// generated one.
func FuzzBeginKeysAsGeneratedCode(f *testing.F) {
	f.Add("a", int64(-1), uint64(1), 0.5, true, []byte("x"))
	f.Add("", int64(0), uint64(0), math.Copysign(0, -1), false, []byte(nil))
	g := idem.NewGuard(memstore.New())
	spec := idem.Spec{Name: "test.BeginKeyFuzz", TTL: time.Hour}
	f.Fuzz(func(t *testing.T, s string, i int64, u uint64, fl float64, bo bool, p []byte) {
		for _, tt := range []struct {
			key   any
			write func(b *idemimpl.KeyBuilder)
		}{
			{s, func(b *idemimpl.KeyBuilder) { b.String(s) }},
			{i, func(b *idemimpl.KeyBuilder) { b.Int(i) }},
			{int32(i), func(b *idemimpl.KeyBuilder) { b.Int(int64(int32(i))) }},
			{u, func(b *idemimpl.KeyBuilder) { b.Uint(u) }},
			{uint8(u), func(b *idemimpl.KeyBuilder) { b.Uint(uint64(uint8(u))) }},
			{fl, func(b *idemimpl.KeyBuilder) { b.Float(fl) }},
			{float32(fl), func(b *idemimpl.KeyBuilder) { b.Float(float64(float32(fl))) }},
			{bo, func(b *idemimpl.KeyBuilder) { b.Bool(bo) }},
			{p, func(b *idemimpl.KeyBuilder) {
				if p == nil {
					b.Nil()
				} else {
					b.Bytes(p)
				}
			}},
		} {
			hand, err := g.Begin(&spec, tt.key).StoreKey()
			if err != nil {
				t.Fatal(err)
			}
			c, m := idemimpl.Begin(g, &spec)
			tt.write(m.Key())
			gen, err := c.StoreKey()
			if err != nil {
				t.Fatal(err)
			}
			if hand != gen {
				t.Errorf("Begin(%T %#v) store key %q, generated %q", tt.key, tt.key, hand, gen)
			}
		}
	})
}
