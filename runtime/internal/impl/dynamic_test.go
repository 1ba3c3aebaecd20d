package impl

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type dynName string

// dynCount is a named number type: Any stores only the predeclared ones.
type dynCount int

type dynKeyer struct{ id string }

func (k dynKeyer) IdemKey() any { return k.id }

// randDyn is a random value of a type KeyBuilder.Any keys (and, unless
// keyOnly is false, Encoder.Any stores), from small domains so that
// equal values of equal types come up often.
func randDyn(r *rand.Rand, depth int, keyOnly bool) any {
	n := 14
	if keyOnly {
		n = 17
	}
	if depth > 3 {
		n = 9 // no containers
	}
	switch r.IntN(n) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return r.IntN(3)
	case 3:
		return int64(r.IntN(3))
	case 4:
		return []float64{0, 1, math.Copysign(0, -1), math.Inf(1)}[r.IntN(4)]
	case 5:
		return []string{"", "a", "1"}[r.IntN(3)]
	case 6:
		return uint8(r.IntN(3))
	case 7:
		return json.Number([]string{"1", "1.0"}[r.IntN(2)])
	case 8:
		return time.Unix(int64(r.IntN(2)), 0).In([]*time.Location{time.UTC, time.FixedZone("x", 3600)}[r.IntN(2)])
	case 9:
		return [][]byte{nil, {}, []byte("1")}[r.IntN(3)]
	case 10, 11:
		if r.IntN(4) == 0 {
			return []any(nil)
		}
		l := make([]any, r.IntN(3))
		for i := range l {
			l[i] = randDyn(r, depth+1, keyOnly)
		}
		return l
	case 12, 13:
		if r.IntN(4) == 0 {
			return map[string]any(nil)
		}
		m := map[string]any{}
		for range r.IntN(3) {
			m[[]string{"a", "b", ""}[r.IntN(3)]] = randDyn(r, depth+1, keyOnly)
		}
		return m
	case 14:
		return dynName([]string{"", "a", "1"}[r.IntN(3)])
	case 15:
		return dynKeyer{[]string{"a", "1"}[r.IntN(2)]}
	default:
		return json.RawMessage([]string{"1", "{}"}[r.IntN(2)])
	}
}

// sameCall is what keys must tell apart: values of different dynamic
// types, or of one type with different values (a time by its instant, a
// float with -0 as 0; nil and empty slices and maps differ).
func sameCall(a, b any) bool {
	if reflect.TypeOf(a) != reflect.TypeOf(b) {
		return false
	}
	switch x := a.(type) {
	case time.Time:
		return x.Equal(b.(time.Time))
	case []byte:
		y := b.([]byte)
		return (x == nil) == (y == nil) && bytes.Equal(x, y)
	case json.RawMessage:
		return bytes.Equal(x, b.(json.RawMessage))
	case []any:
		y := b.([]any)
		if (x == nil) != (y == nil) || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameCall(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y := b.(map[string]any)
		if (x == nil) != (y == nil) || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameCall(v, w) {
				return false
			}
		}
		return true
	}
	return a == b
}

func anyKey(t *testing.T, v any) string {
	t.Helper()
	var b KeyBuilder
	b.Any(v)
	if b.err != nil {
		t.Fatalf("Any(%#v): %v", v, b.err)
	}
	return string(b.buf)
}

// TestAnyKeyInjective: two dynamic values share key bytes exactly when
// they are the same call, over random pairs.
func TestAnyKeyInjective(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	same := 0
	for range 20000 {
		a, b := randDyn(r, 0, true), randDyn(r, 0, true)
		if r.IntN(8) == 0 {
			b = a
		}
		ka, kb := anyKey(t, a), anyKey(t, b)
		if want := sameCall(a, b); (ka == kb) != want {
			t.Fatalf("Any(%#v) and Any(%#v): equal keys %v, want %v", a, b, ka == kb, want)
		} else if want {
			same++
		}
	}
	if same < 2000 {
		t.Fatalf("only %d equal pairs: the domains are too large to test anything", same)
	}
}

func TestAnyKeyRefuses(t *testing.T) {
	x := 1
	for _, v := range []any{&x, struct{ A int }{1}, func() {}, make(chan int), []int{1}, map[string]string{}, []any{1, &x}, math.NaN()} {
		var b KeyBuilder
		b.Any(v)
		if !errors.Is(b.Err(), ErrInvalidKey) {
			t.Errorf("Any(%#v): err %v, want ErrInvalidKey", v, b.Err())
		}
	}
}

// TestAnyKeyCycle: an []any that holds itself stops at MaxDepth.
func TestAnyKeyCycle(t *testing.T) {
	l := []any{nil}
	l[0] = l
	var b KeyBuilder
	b.Any(l)
	if !errors.Is(b.Err(), ErrInvalidKey) {
		t.Fatalf("err %v, want ErrInvalidKey", b.Err())
	}
}

func roundTrip(t *testing.T, v any) any {
	t.Helper()
	var e Encoder
	e.Any(v)
	e.Any("after") // the value must end where it says
	if e.err != nil {
		t.Fatalf("Any(%#v): %v", v, e.err)
	}
	d := Decoder{b: e.buf}
	got := d.Any()
	if after := d.Any(); d.err != nil || after != "after" {
		t.Fatalf("Any(%#v) read back %#v, then %#v, err %v", v, got, after, d.err)
	}
	// Skip reads over it as well.
	d = Decoder{b: e.buf}
	d.Skip()
	if after := d.Any(); d.err != nil || after != "after" {
		t.Fatalf("Skip over Any(%#v): then %#v, err %v", v, after, d.err)
	}
	return got
}

// TestAnyRoundTrip: every storable dynamic value reads back as itself,
// of the same dynamic type, with nil and empty kept apart.
func TestAnyRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	exact := cmp.Options{
		cmp.Comparer(func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }),
		cmp.Comparer(func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }),
	}
	for range 20000 {
		v := randDyn(r, 0, false)
		if diff := cmp.Diff(v, roundTrip(t, v), exact); diff != "" {
			t.Fatalf("Any(%#v) read back as another value (-wrote +read):\n%s", v, diff)
		}
	}
	for _, v := range []any{int8(-3), int16(-300), int32(7), uint(9), uint16(9), uint32(9), uint64(1 << 60), uintptr(4), float32(1.5), complex64(1i), complex128(2 + 1i), time.Duration(5), json.RawMessage(nil)} {
		if got := roundTrip(t, v); !reflect.DeepEqual(got, v) || reflect.TypeOf(got) != reflect.TypeOf(v) {
			t.Errorf("Any(%#v) read back as %#v", v, got)
		}
	}
}

func TestAnyNotStorable(t *testing.T) {
	x := 1
	for _, v := range []any{&x, dynName("a"), dynCount(3), struct{}{}, []int{1}, map[string]any{"a": &x}, errors.New("e")} {
		var e Encoder
		e.Any(v)
		if e.err == nil {
			t.Errorf("Any(%#v) stored; it cannot be read back as its type", v)
		}
	}
}

func TestAnyCorrupt(t *testing.T) {
	for name, b := range map[string][]byte{
		"unknown code": {kDynamic, 0xee, kNil},
		"zero code":    {kDynamic, 0},
		"truncated":    {kDynamic},
		"wrong kind":   {kDynamic, dynString, kInt, 2},
	} {
		d := Decoder{b: b}
		d.Any()
		if d.err == nil {
			t.Errorf("%s: %q read without error", name, b)
		}
		d = Decoder{b: b}
		d.Skip()
		if name != "wrong kind" && d.err == nil {
			t.Errorf("%s: Skip over %q without error", name, b)
		}
	}
}

// Two types declared inside functions share a name and a package, so
// reflect gives them one identity: the second is refused, never keyed
// like the first.
func TestAnyKeyLocalTypes(t *testing.T) {
	a := func() any { type local string; return local("x") }()
	b := func() any { type local string; return local("x") }()
	var kb KeyBuilder
	kb.Any(a)
	if kb.Err() != nil {
		t.Fatalf("the first local type: %v", kb.Err())
	}
	kb = KeyBuilder{}
	kb.Any(b)
	if !errors.Is(kb.Err(), ErrInvalidKey) {
		t.Fatalf("a second local type of the same name: %v, want ErrInvalidKey", kb.Err())
	}
}
