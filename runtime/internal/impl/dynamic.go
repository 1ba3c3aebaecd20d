package impl

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"time"
)

// Values held in an empty interface (any, interface{}) have no static
// type for the generator to write code for. Generated code keys and
// stores them through Any, by their dynamic value, and only for dynamic
// types whose value it can tell apart and restore exactly; any other
// dynamic type fails the call, loudly: a key it cannot write is
// ErrInvalidKey before the function runs, a result it cannot store is
// ErrResultNotEncodable after (recorded, so duplicates do not run it
// again). Nothing is left out silently.

// Any writes a value held in an empty interface: a marker, the dynamic
// type's identity (TypeIdentity) and the value, so values of two types
// never share bytes (int64(1), float64(1), "1" and a named string "1"
// are four keys). Keyable dynamic types: nil, the predeclared basic
// types and named types of their kinds, []byte, []any, map[string]any,
// time.Time (its instant), types that implement Keyer,
// encoding.BinaryMarshaler or encoding.TextMarshaler (checked in that
// order), and named []byte types. Anything else is ErrInvalidKey.
func (b *KeyBuilder) Any(v any) {
	b.tag(tagAny)
	if v == nil {
		b.Nil()
		return
	}
	if !b.Enter() {
		return
	}
	defer b.Leave()
	b.Type(reflect.TypeOf(v))
	switch x := v.(type) {
	case time.Time: // its instant, as a time.Time field is keyed
		b.Time(x)
	case Keyer:
		b.Key(x)
	case encoding.BinaryMarshaler:
		b.Marshaled(x.MarshalBinary())
	case encoding.TextMarshaler:
		b.Marshaled(x.MarshalText())
	case []byte:
		if x == nil {
			b.Nil()
		} else {
			b.Bytes(x)
		}
	case []any:
		KeyList(b, x, (*KeyBuilder).Any)
	case map[string]any:
		KeyMap(b, x, (*KeyBuilder).String, (*KeyBuilder).Any)
	default:
		b.basic(reflect.ValueOf(v))
	}
}

// Predeclared writes v as generated code writes a parameter of v's type
// when that type is predeclared (string, bool, a number) or []byte, and
// reports whether it was; it writes nothing otherwise. Guard.Begin keys a
// hand-written call's key with it, so the call and a wrapper keyed by a
// parameter of that type share their records.
func (b *KeyBuilder) Predeclared(v any) bool {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Type().PkgPath() != "" || rv.Type().Name() == "" && rv.Type() != bytesType {
		return false
	}
	b.basic(rv)
	return true
}

var bytesType = reflect.TypeFor[[]byte]()

// basic writes a value of a basic kind (a predeclared type or a named
// type of one), or fails.
func (b *KeyBuilder) basic(rv reflect.Value) {
	switch rv.Kind() {
	case reflect.Bool:
		b.Bool(rv.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.Int(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b.Uint(rv.Uint())
	case reflect.Float32, reflect.Float64:
		b.Float(rv.Float())
	case reflect.Complex64, reflect.Complex128:
		b.Complex(rv.Complex())
	case reflect.String:
		b.String(rv.String())
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.Uint8 { // json.RawMessage, named []byte
			if rv.IsNil() {
				b.Nil()
			} else {
				b.Bytes(rv.Bytes())
			}
			return
		}
		fallthrough
	default:
		b.Fail(fmt.Errorf("a %s held in an interface cannot be keyed: key a concrete field, or give the type an IdemKey, MarshalBinary or MarshalText method", rv.Type()))
	}
}

// The dynamic types a stored result can hold in an empty interface, each
// restored as exactly that type. Their codes are part of the record
// format: never renumber them.
const (
	dynBool byte = iota + 1
	dynString
	dynInt
	dynInt8
	dynInt16
	dynInt32
	dynInt64
	dynUint
	dynUint8
	dynUint16
	dynUint32
	dynUint64
	dynUintptr
	dynFloat32
	dynFloat64
	dynComplex64
	dynComplex128
	dynBytes
	dynList   // []any
	dynMap    // map[string]any
	dynNumber // json.Number
	dynRaw    // json.RawMessage
	dynTime   // time.Time
	dynDuration
	dynError // an error value (errvalue.go)
	dynLast  = dynError
)

// enterValue begins a value that may be nil: it writes Nil for a nil one
// (isNil), else it is Enter. Where it returns true the caller writes the
// value and then calls Leave.
func (e *Encoder) enterValue(isNil bool) bool {
	if isNil {
		e.Nil()
		return false
	}
	return e.Enter()
}

// Any writes a value held in an empty interface: nil, or its dynamic
// type's code and then its value. Storable dynamic types are the
// predeclared basic types, []byte, []any, map[string]any, json.Number,
// json.RawMessage, time.Time and time.Duration, which covers everything
// encoding/json decodes into an any. Any other dynamic type (a named
// type, a pointer, a struct) cannot be restored from the record without
// its static type, so it fails the encoding: ErrResultNotEncodable.
func (e *Encoder) Any(v any) {
	if !e.enterValue(v == nil) {
		return
	}
	defer e.Leave()
	dyn := func(code byte) { e.buf = append(e.buf, kDynamic, code) }
	switch x := v.(type) {
	case bool:
		dyn(dynBool)
		e.Bool(x)
	case string:
		dyn(dynString)
		e.String(x)
	case []byte:
		dyn(dynBytes)
		e.Bytes(x)
	case json.Number:
		dyn(dynNumber)
		e.String(string(x))
	case json.RawMessage:
		dyn(dynRaw)
		e.Bytes(x)
	case time.Duration:
		dyn(dynDuration)
		e.Int(int64(x))
	case time.Time:
		dyn(dynTime)
		e.Marshaled(x.MarshalBinary())
	case []any:
		dyn(dynList)
		EncList(e, x, func(e *Encoder, el *any) { e.Any(*el) })
	case map[string]any:
		dyn(dynMap)
		EncMap(e, x, (*Encoder).String, (*Encoder).Any)
	default:
		if e.anyNumber(v) {
			return
		}
		e.Fail(fmt.Errorf("a %T held in an interface cannot be stored: only nil, basic types, []byte, []any, map[string]any, json.Number, json.RawMessage, time.Time and time.Duration are restored exactly", v))
	}
}

// dynNumberTypes are the predeclared integer, float and complex types
// Any restores exactly, by their dynamic type code.
var dynNumberTypes = map[byte]reflect.Type{
	dynInt:        reflect.TypeFor[int](),
	dynInt8:       reflect.TypeFor[int8](),
	dynInt16:      reflect.TypeFor[int16](),
	dynInt32:      reflect.TypeFor[int32](),
	dynInt64:      reflect.TypeFor[int64](),
	dynUint:       reflect.TypeFor[uint](),
	dynUint8:      reflect.TypeFor[uint8](),
	dynUint16:     reflect.TypeFor[uint16](),
	dynUint32:     reflect.TypeFor[uint32](),
	dynUint64:     reflect.TypeFor[uint64](),
	dynUintptr:    reflect.TypeFor[uintptr](),
	dynFloat32:    reflect.TypeFor[float32](),
	dynFloat64:    reflect.TypeFor[float64](),
	dynComplex64:  reflect.TypeFor[complex64](),
	dynComplex128: reflect.TypeFor[complex128](),
}

// dynNumberCodes is dynNumberTypes the other way round.
var dynNumberCodes = func() map[reflect.Type]byte {
	m := make(map[reflect.Type]byte, len(dynNumberTypes))
	for code, t := range dynNumberTypes {
		m[t] = code
	}
	return m
}()

// dynNumberBits is the width an integer of type t is read with: its own
// (an int written on a 64-bit machine that does not fit is
// ErrResultIncompatible on a 32-bit one), but 64 for uintptr, which
// records have always read whole.
func dynNumberBits(t reflect.Type) int {
	if t.Kind() == reflect.Uintptr {
		return 64
	}
	return t.Bits()
}

// anyNumber writes v if its dynamic type is a predeclared integer,
// float or complex type, and reports whether it was. A named type of
// such a kind is not one.
func (e *Encoder) anyNumber(v any) bool {
	rv := reflect.ValueOf(v)
	code, ok := dynNumberCodes[rv.Type()]
	if !ok {
		return false
	}
	e.buf = append(e.buf, kDynamic, code)
	switch {
	case rv.CanInt():
		e.Int(rv.Int())
	case rv.CanUint():
		e.Uint(rv.Uint())
	case code == dynFloat32:
		e.Float32(v.(float32)) // as it is: through a float64 a NaN's bits may change
	case rv.CanFloat():
		e.Float64(rv.Float())
	default:
		e.Complex(rv.Complex())
	}
	return true
}

// Any reads a value Encoder.Any wrote, as the dynamic type it had.
func (d *Decoder) Any() any {
	if d.Nil() || !d.take(kDynamic) {
		return nil
	}
	code := d.fixed(1)
	if d.err != nil {
		return nil
	}
	if !d.Enter() {
		return nil
	}
	defer d.Leave()
	switch code[0] {
	case dynBool:
		return d.Bool()
	case dynString:
		return d.String()
	case dynBytes:
		return d.Bytes()
	case dynNumber:
		return json.Number(d.String())
	case dynRaw:
		return json.RawMessage(d.Bytes())
	case dynDuration:
		return time.Duration(d.Int(64))
	case dynTime:
		var t time.Time
		d.Unmarshaled(t.UnmarshalBinary(d.Marshaled()))
		return t
	case dynList:
		return d.anyList()
	case dynMap:
		return d.anyMap()
	}
	if v, ok := d.anyNumber(code[0]); ok {
		return v
	}
	d.corrupt("unknown dynamic type")
	return nil
}

// anyNumber reads a predeclared integer, float or complex value of the
// dynamic type code names; ok is false for any other code.
func (d *Decoder) anyNumber(code byte) (v any, ok bool) {
	t, ok := dynNumberTypes[code]
	if !ok {
		return nil, false
	}
	if code == dynFloat32 {
		return d.Float32(), true // as it was: through a float64 a NaN's bits may change
	}
	rv := reflect.New(t).Elem()
	switch {
	case rv.CanInt():
		rv.SetInt(d.Int(dynNumberBits(t)))
	case rv.CanUint():
		rv.SetUint(d.Uint(dynNumberBits(t)))
	case rv.CanFloat():
		rv.SetFloat(d.Float64())
	default:
		rv.SetComplex(d.Complex())
	}
	return rv.Interface(), true
}

func (d *Decoder) anyList() any {
	if d.Nil() {
		return []any(nil)
	}
	l := make([]any, d.List())
	for i := range l {
		l[i] = d.Any()
	}
	return l
}

func (d *Decoder) anyMap() any {
	if d.Nil() {
		return map[string]any(nil)
	}
	n := d.Map()
	m := make(map[string]any, n)
	for range n {
		k := d.String()
		m[k] = d.Any()
	}
	return m
}

// Variant starts a value held in an interface whose dynamic types the
// generated code lists (an SDK's union of block types): the type's name,
// then its value, then End(at).
func (e *Encoder) Variant(name string) (at int) {
	at = e.List(2)
	e.String(name)
	return at
}

// NotVariant records that v, held in the interface iface, is of a
// dynamic type the generated code does not list: the result cannot be
// stored (ErrResultNotEncodable).
func (e *Encoder) NotVariant(iface string, v any) {
	e.Fail(fmt.Errorf("a %T held in %s cannot be stored: its codec lists the types of %s's package that it can restore, and not this one", v, iface, iface))
}

// Variant reads the name of the dynamic type of a value Encoder.Variant
// wrote; its value follows.
func (d *Decoder) Variant() string {
	if n := d.List(); n != 2 && d.err == nil {
		d.corrupt("a variant of " + strconv.Itoa(n) + " values")
	}
	return d.String()
}

// NotVariant records a stored dynamic type that the generated code no
// longer lists: ErrResultIncompatible.
func (d *Decoder) NotVariant(name string) {
	if d.err == nil {
		d.Fail(fmt.Errorf("%w: stored a %s, which the result type's codec no longer lists; bump version= for a fresh key space", ErrResultIncompatible, name))
		d.off = len(d.b)
	}
}

// NotVariant records that v, held in the interface iface, is of a
// dynamic type the generated code does not list: ErrInvalidKey.
func (b *KeyBuilder) NotVariant(iface string, v any) {
	b.Fail(fmt.Errorf("a %T held in %s cannot be keyed: its key code lists the types of %s's package that it can key, and not this one", v, iface, iface))
}
