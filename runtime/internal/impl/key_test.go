package impl

import (
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func keyOf(t *testing.T, write func(b *KeyBuilder)) ([32]byte, error) {
	t.Helper()
	var b KeyBuilder
	write(&b)
	return b.Sum(), b.Err()
}

func TestKeyEncodingEqual(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 5, time.UTC)
	big := map[string]int{}
	for i := 0; i < 40; i++ {
		big[strings.Repeat("k", i)] = i
	}
	small := map[string]int{"e": 5, "a": 1, "d": 4, "c": 3, "b": 2, "": 0}
	tests := []struct {
		name string
		a, b func(b *KeyBuilder)
	}{
		{"same instant in two zones",
			func(b *KeyBuilder) { b.Time(at) },
			func(b *KeyBuilder) { b.Time(at.In(time.FixedZone("X", 3600))) }},
		{"monotonic reading ignored",
			func(b *KeyBuilder) { now := time.Now(); b.Time(now) },
			nil}, // filled below
		{"negative zero is zero",
			func(b *KeyBuilder) { b.Float(math.Copysign(0, -1)) },
			func(b *KeyBuilder) { b.Float(0) }},
		{"small map order does not matter (many runs)",
			func(b *KeyBuilder) { keyMapInline(b, small) },
			func(b *KeyBuilder) { keyMapInline(b, small) }},
		{"map order does not matter (many runs)",
			func(b *KeyBuilder) { keyMapInline(b, big) },
			func(b *KeyBuilder) { keyMapInline(b, big) }},
		{"long strings past the flush threshold",
			func(b *KeyBuilder) { b.String(strings.Repeat("x", 10000)); b.String("y") },
			func(b *KeyBuilder) { b.String(strings.Repeat("x", 10000)); b.String("y") }},
	}
	now := time.Now()
	tests[1].a = func(b *KeyBuilder) { b.Time(now) }
	tests[1].b = func(b *KeyBuilder) { b.Time(now.Round(0)) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := 0; i < 20; i++ { // map iteration order is random per run
				ka, erra := keyOf(t, tt.a)
				kb, errb := keyOf(t, tt.b)
				if erra != nil || errb != nil {
					t.Fatalf("errors: %v, %v", erra, errb)
				}
				if ka != kb {
					t.Fatalf("keys differ")
				}
			}
		})
	}
}

func TestKeyEncodingDistinct(t *testing.T) {
	tests := []struct {
		name string
		a, b func(b *KeyBuilder)
	}{
		{"string boundaries", func(b *KeyBuilder) { b.String("ab"); b.String("c") }, func(b *KeyBuilder) { b.String("a"); b.String("bc") }},
		{"int vs uint in a Keyer", func(b *KeyBuilder) { b.Open(); b.Int(1); b.Close() }, func(b *KeyBuilder) { b.Open(); b.Uint(1); b.Close() }},
		{"empty string vs zero in a Keyer", func(b *KeyBuilder) { b.Open(); b.String(""); b.Close() }, func(b *KeyBuilder) { b.Open(); b.Int(0); b.Close() }},
		{"time vs two ints in a Keyer", func(b *KeyBuilder) { b.Open(); b.Time(time.Unix(1, 0)); b.Close() }, func(b *KeyBuilder) { b.Open(); b.Int(1); b.Int(0); b.Close() }},
		{"nil vs empty list", func(b *KeyBuilder) { b.Nil() }, func(b *KeyBuilder) { b.List(0) }},
		{"nil vs empty map", func(b *KeyBuilder) { b.Nil() }, func(b *KeyBuilder) { b.MapStart(0); b.MapEnd() }},
		{"nil pointer vs pointer to zero", func(b *KeyBuilder) { b.Nil() }, func(b *KeyBuilder) { b.Ptr(); b.Int(0) }},
		{"nil vs empty bytes", func(b *KeyBuilder) { b.Nil() }, func(b *KeyBuilder) { b.Bytes([]byte{}) }},
		{"string vs bytes", func(b *KeyBuilder) { b.String("a") }, func(b *KeyBuilder) { b.Bytes([]byte("a")) }},
		{"true vs false", func(b *KeyBuilder) { b.Bool(true) }, func(b *KeyBuilder) { b.Bool(false) }},
		{"list boundaries", func(b *KeyBuilder) { b.List(1); b.Int(1); b.Int(2) }, func(b *KeyBuilder) { b.List(2); b.Int(1); b.Int(2) }},
		{"map entries differ", func(b *KeyBuilder) {
			b.MapStart(2)
			b.MapEntry()
			b.String("a")
			b.Int(1)
			b.MapEntry()
			b.String("b")
			b.Int(2)
			b.MapEnd()
		}, func(b *KeyBuilder) {
			b.MapStart(2)
			b.MapEntry()
			b.String("a")
			b.Int(2)
			b.MapEntry()
			b.String("b")
			b.Int(1)
			b.MapEnd()
		}},
		{"instants a nanosecond apart", func(b *KeyBuilder) { b.Time(time.Unix(5, 1)) }, func(b *KeyBuilder) { b.Time(time.Unix(5, 2)) }},
		{"keyer bracketed", func(b *KeyBuilder) { b.Open(); b.String("a"); b.Close(); b.String("b") }, func(b *KeyBuilder) { b.Open(); b.String("a"); b.String("b"); b.Close() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ka, _ := keyOf(t, tt.a)
			kb, _ := keyOf(t, tt.b)
			if ka == kb {
				t.Fatal("distinct inputs share a key")
			}
		})
	}
}

func TestKeyErrors(t *testing.T) {
	tests := []struct {
		name  string
		write func(b *KeyBuilder)
		ok    bool
	}{
		{"NaN", func(b *KeyBuilder) { b.Float(math.NaN()) }, false},
		{"infinity is a value", func(b *KeyBuilder) { b.Float(math.Inf(1)) }, true},
		{"empty ID", func(b *KeyBuilder) { b.ID("") }, false},
		{"ID of 255 bytes", func(b *KeyBuilder) { b.ID(strings.Repeat("a", 255)) }, true},
		{"ID of 256 bytes", func(b *KeyBuilder) { b.ID(strings.Repeat("a", 256)) }, false},
		{"marshaler error", func(b *KeyBuilder) { b.Marshaled(nil, errors.New("boom")) }, false},
		{"NaN inside complex", func(b *KeyBuilder) { b.Complex(complex(1, math.NaN())) }, false},
		{"MapEnd without MapStart", func(b *KeyBuilder) { b.MapEnd() }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := keyOf(t, tt.write)
			if tt.ok != (err == nil) {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("err = %v, want it to wrap ErrInvalidKey", err)
			}
		})
	}
}

// The encoding is part of the contract: keys written by one version must
// find records written by another. This pins it.
func TestKeyEncodingStable(t *testing.T) {
	var b KeyBuilder
	b.String("cus_1")
	b.Int(-7)
	b.Uint(7)
	b.Float(1.5)
	b.Bool(true)
	b.Time(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC))
	b.Nil()
	b.Ptr()
	b.List(1)
	b.Bytes([]byte{1, 2})
	b.MapStart(2)
	b.MapEntry()
	b.String("b")
	b.Int(2)
	b.MapEntry()
	b.String("a")
	b.Int(1)
	b.MapEnd()
	sum := b.Sum()
	got := hex.EncodeToString(sum[:])
	const want = "06c773383824712f061a35acde9d2f33ad2b2b00342be327c4ee31d47c042597"
	if got != want {
		t.Fatalf("key encoding changed: got %s, want %s; a change breaks every stored record", got, want)
	}
}
