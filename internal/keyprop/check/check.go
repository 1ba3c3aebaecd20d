// Package check is the runtime half of the key property test
// (internal/keyprop): given wrappers that idemgen generated for random
// types, it draws random values of those types by reflection and checks
// the two rules every generated wrapper must keep:
//
//   - Keys are injective: two values share a store key if and only if
//     they are equal under the key equality of docs/GENERATOR.md
//     ("What makes two calls the same"), which Equal implements
//     independently of the generator.
//   - Replays are faithful: a result read back from the stored bytes
//     equals the original under go-cmp, with float bits, nil vs empty,
//     and big.Float precision counted.
package check

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/internal/keyprop/other"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// Case is one generated wrapper under test.
type Case struct {
	Name string
	Type reflect.Type
	// Key returns the store key of a call with v (the wrapper's Key
	// method); nil for a round-trip case.
	Key func(v any) (string, error)
	// Paths are the key= paths of a key case (field names from the
	// parameter, through pointers); nil when the whole value is the key.
	Paths [][]string
	// Call runs the wrapper with the call ID id and the value v, which
	// the function returns; nil for a key case.
	Call func(ctx context.Context, id int64, v any) (any, error)
}

// Stats counts what a run checked.
type Stats struct {
	Types, Values, Pairs, Replays int
}

// Add adds o's counts to s.
func (s *Stats) Add(o Stats) {
	s.Types += o.Types
	s.Values += o.Values
	s.Pairs += o.Pairs
	s.Replays += o.Replays
}

// String summarises the counts for a test log.
func (s Stats) String() string {
	return fmt.Sprintf("%d types, %d values, %d key pairs, %d replays", s.Types, s.Values, s.Pairs, s.Replays)
}

// Run checks every case with n random values each (and their
// equivalent twins and one-leaf mutants, for keys).
func Run(t testing.TB, r *rand.Rand, cases []Case, n int) Stats {
	t.Helper()
	var st Stats
	for _, c := range cases {
		st.Types++
		if c.Key != nil {
			st.Add(keys(t, r, c, n))
		}
		if c.Call != nil {
			st.Add(roundTrips(t, r, c, n))
		}
	}
	return st
}

func keys(t testing.TB, r *rand.Rand, c Case, n int) Stats {
	t.Helper()
	var vals []reflect.Value
	for range n {
		v := Rand(r, c.Type, false)
		vals = append(vals, v, Twin(r, v), Mutant(r, v))
	}
	ks := make([]string, len(vals))
	for i, v := range vals {
		k, err := c.Key(v.Interface())
		if err != nil {
			t.Errorf("%s: key of %s: %v", c.Name, Dump(v.Interface()), err)
			return Stats{}
		}
		ks[i] = k
	}
	st := Stats{Values: len(vals)}
	for i := range vals {
		for j := i + 1; j < len(vals); j++ {
			st.Pairs++
			eq, same := EqualPaths(vals[i], vals[j], c.Paths), ks[i] == ks[j]
			if eq == same {
				continue
			}
			// One report per case; the other cases go on.
			if same {
				t.Errorf("%s: distinct calls share the key %s:\n  %s\n  %s", c.Name, ks[i], Dump(vals[i].Interface()), Dump(vals[j].Interface()))
			} else {
				t.Errorf("%s: equal calls have different keys:\n  %s\n  %s", c.Name, Dump(vals[i].Interface()), Dump(vals[j].Interface()))
			}
			return st
		}
	}
	return st
}

var nextID int64

func roundTrips(t testing.TB, r *rand.Rand, c Case, n int) Stats {
	t.Helper()
	ctx := context.Background()
	var st Stats
	for range n {
		v := Rand(r, c.Type, true)
		nextID++
		if _, err := c.Call(ctx, nextID, v.Interface()); err != nil {
			t.Fatalf("%s: first call with %#v: %v", c.Name, v.Interface(), err)
		}
		got, err := c.Call(ctx, nextID, v.Interface())
		if err != nil {
			t.Fatalf("%s: replay of %#v: %v", c.Name, v.Interface(), err)
		}
		if diff := cmp.Diff(v.Interface(), got, Faithful...); diff != "" {
			t.Errorf("%s: the replay differs from the result (-result +replay):\n%s", c.Name, diff)
			return st
		}
		st.Values++
		st.Replays++
	}
	return st
}

// Faithful are the go-cmp options of a faithful replay: unexported state
// compared, floats by their bits (-0, NaN payloads), big.Float by value,
// precision, mode and sign, time.Time by its Equal method (the instant).
var Faithful = []cmp.Option{
	cmp.Exporter(func(reflect.Type) bool { return true }),
	cmp.FilterValues(func(a, b any) bool { return isFloat(a) && isFloat(b) }, cmp.Comparer(func(a, b any) bool {
		x, y := reflect.ValueOf(a), reflect.ValueOf(b)
		if x.Type() != y.Type() {
			return false
		}
		if x.Kind() == reflect.Complex64 || x.Kind() == reflect.Complex128 {
			return math.Float64bits(real(x.Complex())) == math.Float64bits(real(y.Complex())) &&
				math.Float64bits(imag(x.Complex())) == math.Float64bits(imag(y.Complex()))
		}
		return math.Float64bits(x.Float()) == math.Float64bits(y.Float())
	})),
	cmp.Comparer(func(a, b *big.Float) bool {
		if a == nil || b == nil {
			return a == b
		}
		return a.Cmp(b) == 0 && a.Prec() == b.Prec() && a.Mode() == b.Mode() && a.Signbit() == b.Signbit() && a.IsInf() == b.IsInf()
	}),
	cmp.Comparer(func(a, b *big.Int) bool {
		if a == nil || b == nil {
			return a == b
		}
		return a.Cmp(b) == 0
	}),
}

func isFloat(x any) bool {
	switch reflect.ValueOf(x).Kind() {
	case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	}
	return false
}

var (
	timeType    = reflect.TypeFor[time.Time]()
	rawType     = reflect.TypeFor[json.RawMessage]()
	bigFloatPtr = reflect.TypeFor[*big.Float]()
	bigIntPtr   = reflect.TypeFor[*big.Int]()
	decType     = reflect.TypeFor[other.Dec]()
	tagType     = reflect.TypeFor[other.Tag]()
	binType     = reflect.TypeFor[other.Bin]()
	ipType      = reflect.TypeFor[net.IP]()
)

// Equal is the key equality: what makes two calls the same call.
//
//   - Booleans, integers and strings: equal values.
//   - Floats and complex numbers: equal as numbers (-0 == 0; NaN is never
//     a key).
//   - time.Time: the same instant, whatever the zone or monotonic reading.
//   - Pointers, slices, maps: both nil, or both non-nil with equal
//     contents (nil differs from empty); map entries in any order.
//   - Structs: every field equal, including unexported fields of the
//     package's own types and embedded fields (an embedded type with a
//     key method is one field, keyed by that method); fields tagged
//     idem:"-", blank fields and fields that hold no data do not count.
//   - A type with a key method of its own (idem.Keyer, MarshalBinary,
//     MarshalText): what the method writes; for the test's types, their
//     state.
func Equal(a, b reflect.Value) bool {
	a, b = open(a), open(b)
	t := a.Type()
	switch t {
	case timeType:
		return get(a).Interface().(time.Time).Equal(get(b).Interface().(time.Time))
	case ipType:
		// The address: its 4- and 16-byte forms are one address.
		x, y := get(a).Interface().(net.IP), get(b).Interface().(net.IP)
		if x == nil || y == nil || len(x) == 0 || len(y) == 0 {
			return (x == nil) == (y == nil) && len(x) == len(y)
		}
		return x.Equal(y)
	case bigFloatPtr:
		// The exact value (precision aside), sign of zero included.
		x, y := get(a).Interface().(*big.Float), get(b).Interface().(*big.Float)
		if x == nil || y == nil {
			return x == y
		}
		return x.Cmp(y) == 0 && x.Signbit() == y.Signbit()
	}
	switch a.Kind() {
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float()
	case reflect.Complex64, reflect.Complex128:
		return a.Complex() == b.Complex()
	case reflect.String:
		return a.String() == b.String()
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return Equal(a.Elem(), b.Elem())
	case reflect.Slice:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		fallthrough
	case reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !Equal(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		if a.Len() != b.Len() {
			return false
		}
		for it := a.MapRange(); it.Next(); {
			x := b.MapIndex(it.Key())
			if !x.IsValid() || !Equal(addressable(it.Value()), addressable(x)) {
				return false
			}
		}
		return true
	case reflect.Interface: // any: the same dynamic type and an equal value
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		x, y := a.Elem(), b.Elem()
		return x.Type() == y.Type() && Equal(addressable(x), addressable(y))
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Name == "_" || f.Tag.Get("idem") == "-" || f.Type.Size() == 0 {
				continue
			}
			if !Equal(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	panic(fmt.Sprintf("check.Equal: kind %s of %s", a.Kind(), t))
}

// EqualPaths is the key equality of a key= list: each path's value
// equal, where a nil pointer on the way to a field is a value of its own
// (absent). With no paths, the whole values.
func EqualPaths(a, b reflect.Value, paths [][]string) bool {
	if paths == nil {
		return Equal(a, b)
	}
	for _, p := range paths {
		x, y := follow(a, p), follow(b, p)
		if x.IsValid() != y.IsValid() || x.IsValid() && !Equal(x, y) {
			return false
		}
	}
	return true
}

// follow reads the field path p from v; invalid when a pointer on the
// way is nil.
func follow(v reflect.Value, p []string) reflect.Value {
	for _, f := range p {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}
			}
			v = v.Elem()
		}
		v = v.FieldByName(f)
	}
	return v
}

// get returns v, readable through Interface even when v was reached
// through an unexported field.
func get(v reflect.Value) reflect.Value {
	if v.CanInterface() {
		return v
	}
	if v.CanAddr() {
		return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
	}
	c := reflect.New(v.Type()).Elem()
	settable(c).Set(v)
	return c
}

// addressable copies v (a map key or value, not read-only) to where its
// unexported fields can be reached.
func addressable(v reflect.Value) reflect.Value {
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	return c
}

// open drops the read-only mark of a value reached through an unexported
// field, so what it holds (map values too) can be read and copied.
func open(v reflect.Value) reflect.Value {
	if v.CanAddr() {
		return settable(v)
	}
	return v
}

// settable returns v, settable even when it was reached through an
// unexported field (v must be addressable).
func settable(v reflect.Value) reflect.Value {
	if v.CanSet() {
		return v
	}
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

// dynTypes are the dynamic types Rand puts in an any: some of those the
// runtime keys and stores by value (containers last).
var dynTypes = []reflect.Type{
	reflect.TypeFor[bool](), reflect.TypeFor[int64](), reflect.TypeFor[int](), reflect.TypeFor[uint8](),
	reflect.TypeFor[float64](), reflect.TypeFor[float32](), reflect.TypeFor[string](), reflect.TypeFor[[]byte](),
	reflect.TypeFor[json.Number](), reflect.TypeFor[[]any](), reflect.TypeFor[map[string]any](),
}

// maxDepth bounds how deeply Rand nests recursive types.
const maxDepth = 4

// Rand draws a value of t from small domains, so that equal and nearly
// equal values are common. nan allows NaN (never a key, but a result).
func Rand(r *rand.Rand, t reflect.Type, nan bool) reflect.Value {
	v := reflect.New(t).Elem()
	fill(r, v, nan, 0)
	return v
}

var (
	strs   = []string{"", "a", "b", "ab", "n", "\x00", "é", "a\x00"}
	ints   = []int64{0, 1, -1, 2, 55, 110, -128, 127, math.MaxInt64, math.MinInt64}
	floats = []float64{0, math.Copysign(0, -1), 1, -1.5, 0.1, 1e300, math.Inf(1), math.Inf(-1), 5.5e-324}
)

func fill(r *rand.Rand, v reflect.Value, nan bool, depth int) {
	v = settable(v)
	t := v.Type()
	switch t {
	case timeType:
		at := []time.Time{time.Unix(0, 0), time.Unix(1, 0), time.Unix(0, 1), time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}[r.IntN(4)]
		zone := []*time.Location{time.UTC, time.FixedZone("A", 3600), time.FixedZone("B", -7200)}[r.IntN(3)]
		v.Set(reflect.ValueOf(at.In(zone)))
		return
	case rawType:
		raws := []json.RawMessage{nil, {}, json.RawMessage("1"), json.RawMessage(`"a"`), json.RawMessage("[]"), json.RawMessage("null")}
		v.Set(reflect.ValueOf(raws[r.IntN(len(raws))]))
		return
	case decType:
		v.Set(reflect.ValueOf(other.NewDec(ints[r.IntN(4)], uint8(r.IntN(3)))))
		return
	case tagType:
		v.Set(reflect.ValueOf(other.NewTag(strs[r.IntN(4)])))
		return
	case binType:
		v.Set(reflect.ValueOf(other.NewBin(uint16(r.IntN(3)), uint16(r.IntN(3)))))
		return
	case ipType:
		ips := []net.IP{nil, {}, net.IPv4(10, 0, 0, 1).To4(), net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 2), net.IPv6loopback}
		v.Set(reflect.ValueOf(ips[r.IntN(len(ips))]))
		return
	case bigFloatPtr:
		if r.IntN(4) > 0 {
			x := new(big.Float).SetPrec([]uint{24, 53, 200}[r.IntN(3)])
			x.Quo(big.NewFloat(float64(ints[r.IntN(5)])), big.NewFloat(3))
			if r.IntN(4) == 0 {
				x.Neg(x)
			}
			v.Set(reflect.ValueOf(x))
		}
		return
	case bigIntPtr:
		if r.IntN(4) > 0 {
			x := new(big.Int).Lsh(big.NewInt(ints[r.IntN(len(ints))]), uint(r.IntN(100)))
			v.Set(reflect.ValueOf(x))
		}
		return
	}
	switch t.Kind() {
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x := ints[r.IntN(len(ints))]
		for v.OverflowInt(x) {
			x = ints[r.IntN(6)]
		}
		v.SetInt(x)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		x := uint64(ints[r.IntN(6)] & 0x7f)
		if r.IntN(8) == 0 && !v.OverflowUint(math.MaxUint64) {
			x = math.MaxUint64
		}
		v.SetUint(x)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(randFloat(r, v, nan))
	case reflect.Complex64, reflect.Complex128:
		v.SetComplex(complex(randFloat(r, v, nan), randFloat(r, v, nan)))
	case reflect.String:
		v.SetString(strs[r.IntN(len(strs))])
	case reflect.Pointer:
		if depth >= maxDepth || r.IntN(3) == 0 {
			return
		}
		p := reflect.New(t.Elem())
		fill(r, p.Elem(), nan, depth+1)
		v.Set(p)
	case reflect.Slice:
		if depth >= maxDepth || r.IntN(4) == 0 {
			return
		}
		s := reflect.MakeSlice(t, r.IntN(3), 2)
		for i := range s.Len() {
			fill(r, s.Index(i), nan, depth+1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(r, v.Index(i), nan, depth+1)
		}
	case reflect.Map:
		if depth >= maxDepth || r.IntN(4) == 0 {
			return
		}
		m := reflect.MakeMap(t)
		for range r.IntN(3) {
			k, e := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
			fill(r, k, false, depth+1)
			fill(r, e, nan, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(r, v.Field(i), nan, depth+1)
		}
	case reflect.Interface: // any: a value of a type it keys and stores, or nil
		dyn := dynTypes
		if depth >= maxDepth {
			dyn = dyn[:len(dyn)-2] // no []any, map[string]any
		}
		if r.IntN(6) == 0 {
			return
		}
		x := reflect.New(dyn[r.IntN(len(dyn))]).Elem()
		fill(r, x, nan, depth+1)
		v.Set(x)
	default:
		panic(fmt.Sprintf("check.Rand: kind %s of %s", t.Kind(), t))
	}
}

func randFloat(r *rand.Rand, v reflect.Value, nan bool) float64 {
	if nan && r.IntN(8) == 0 {
		return math.Float64frombits(0x7ff8000000000001 + uint64(r.IntN(3))) // NaN payloads
	}
	x := floats[r.IntN(len(floats))]
	if v.Kind() == reflect.Float32 || v.Kind() == reflect.Complex64 {
		x = float64(float32(x)) // what the field can hold
	}
	return x
}

// Copy returns a deep copy of v (no sharing, so Mutant cannot reach v).
func Copy(v reflect.Value) reflect.Value {
	src := reflect.New(v.Type()).Elem()
	src.Set(v) // addressable: so is everything below it but map entries
	c := reflect.New(v.Type()).Elem()
	deepCopy(c, src)
	return c
}

func deepCopy(dst, src reflect.Value) {
	dst, src = settable(dst), open(src)
	t := src.Type()
	switch t {
	case timeType, decType, tagType, binType:
		dst.Set(get(src))
		return
	case ipType:
		if !src.IsNil() {
			dst.Set(reflect.ValueOf(append(net.IP{}, get(src).Interface().(net.IP)...)))
		}
		return
	case bigFloatPtr:
		if !src.IsNil() {
			dst.Set(reflect.ValueOf(new(big.Float).Copy(get(src).Interface().(*big.Float))))
		}
		return
	case bigIntPtr:
		if !src.IsNil() {
			dst.Set(reflect.ValueOf(new(big.Int).Set(get(src).Interface().(*big.Int))))
		}
		return
	}
	switch src.Kind() {
	case reflect.Pointer:
		if !src.IsNil() {
			p := reflect.New(t.Elem())
			deepCopy(p.Elem(), src.Elem())
			dst.Set(p)
		}
	case reflect.Slice:
		if !src.IsNil() {
			s := reflect.MakeSlice(t, src.Len(), src.Len())
			for i := range src.Len() {
				deepCopy(s.Index(i), src.Index(i))
			}
			dst.Set(s)
		}
	case reflect.Array:
		for i := range src.Len() {
			deepCopy(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if !src.IsNil() {
			m := reflect.MakeMap(t)
			for it := src.MapRange(); it.Next(); {
				k, e := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
				deepCopy(k, addressable(it.Key()))
				deepCopy(e, addressable(it.Value()))
				m.SetMapIndex(k, e)
			}
			dst.Set(m)
		}
	case reflect.Struct:
		for i := range src.NumField() {
			deepCopy(dst.Field(i), src.Field(i))
		}
	case reflect.Interface:
		if !src.IsNil() {
			e := reflect.New(src.Elem().Type()).Elem()
			deepCopy(e, addressable(src.Elem()))
			dst.Set(e)
		}
	default:
		dst.Set(get(src))
	}
}

// Twin returns a copy of v that is the same call written differently:
// zeros negated, times in another zone, maps rebuilt.
func Twin(r *rand.Rand, v reflect.Value) reflect.Value {
	c := Copy(v)
	twin(r, c)
	return c
}

func twin(r *rand.Rand, v reflect.Value) {
	v = settable(v)
	switch v.Type() {
	case timeType:
		tm := v.Interface().(time.Time)
		v.Set(reflect.ValueOf(tm.In(time.FixedZone("T", 60*(1+r.IntN(600))))))
		return
	case decType, tagType, binType, rawType, bigFloatPtr, bigIntPtr, ipType:
		return
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if v.Float() == 0 {
			v.SetFloat(math.Copysign(0, -1))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			twin(r, v.Elem())
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			twin(r, v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		m := reflect.MakeMap(v.Type())
		keys := v.MapKeys()
		for i := len(keys) - 1; i >= 0; i-- {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(keys[i]))
			twin(r, e)
			m.SetMapIndex(keys[i], e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			twin(r, v.Field(i))
		}
	case reflect.Interface:
		if !v.IsNil() {
			e := addressable(v.Elem())
			twin(r, e)
			v.Set(e)
		}
	}
}

// Mutant returns a copy of v with one part (a leaf, or a pointer, slice
// or map as a whole) drawn anew: most mutants are other calls, some are
// the same call.
func Mutant(r *rand.Rand, v reflect.Value) reflect.Value {
	c := Copy(v)
	var spots []func()
	var walk func(x reflect.Value, depth int)
	walk = func(x reflect.Value, depth int) {
		x = settable(x)
		spots = append(spots, func() {
			n := reflect.New(x.Type()).Elem()
			fill(r, n, false, depth)
			x.Set(n)
		})
		switch x.Type() {
		case timeType, decType, tagType, binType, rawType, bigFloatPtr, bigIntPtr, ipType:
			return
		}
		switch x.Kind() {
		case reflect.Pointer:
			if !x.IsNil() {
				walk(x.Elem(), depth+1)
			}
		case reflect.Slice, reflect.Array:
			for i := range x.Len() {
				walk(x.Index(i), depth+1)
			}
		case reflect.Map:
			for _, k := range x.MapKeys() {
				spots = append(spots, func() {
					e := reflect.New(x.Type().Elem()).Elem()
					fill(r, e, false, depth+1)
					x.SetMapIndex(k, e)
				})
			}
		case reflect.Struct:
			for i := range x.NumField() {
				walk(x.Field(i), depth+1)
			}
		}
	}
	walk(c, 0)
	spots[r.IntN(len(spots))]()
	return c
}

// NewGuard returns a Guard over a memory store whose replays decode the
// stored bytes, as every networked store's do (the memory store would
// hand back the first call's value).
func NewGuard() *idem.Guard {
	return idem.NewGuard(decodingStore{memstore.New()})
}

type decodingStore struct{ *memstore.Store }

func (s decodingStore) Claim(ctx context.Context, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	r, err := s.Store.Claim(ctx, req)
	r.Result.Value = nil
	return r, err
}

// As is v as a T; a nil v is T's zero value (a nil any, which v.(any)
// would not convert).
func As[T any](v any) T {
	t, _ := v.(T)
	return t
}

// Dump prints v for a failure message.
func Dump(v any) string { return strings.ReplaceAll(fmt.Sprintf("%#v", v), "\n", " ") }
