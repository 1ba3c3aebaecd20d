package impl

import (
	"cmp"
	"maps"
	"slices"
)

// Combinators: the shapes generated code repeats around a value that
// another generated function writes (a pointer to it, a slice of it), and
// the codecs of results of one basic type, as one call each. Each writes
// and reads exactly the bytes of the inline code it stands for, so keys
// and records do not depend on which form a build generated.
//
// Keys have KeyPtr, and KeyList and KeyMap for elements of a basic type
// only: they hand each element to its writer by value, so a slice or map
// the caller keeps on its stack stays there, inlined or not. Handing
// elements by pointer to a func value would make them escape, at an
// allocation a call. The codecs' EncList and DecList see only results,
// which are on the heap already; EncMap and DecMap take keys and values by
// value too, as a map's cannot be addressed and a copy handed by pointer
// to a func value would be allocated.

// KeyPtr writes a pointer: Nil, or Ptr and the value key writes.
func KeyPtr[T any](b *KeyBuilder, p *T, key func(*KeyBuilder, *T)) {
	if p == nil {
		b.Nil()
		return
	}
	b.Ptr()
	key(b, p)
}

// KeyList writes a slice: Nil, or List and each element, by value.
func KeyList[S ~[]E, E any](b *KeyBuilder, s S, key func(*KeyBuilder, E)) {
	if s == nil {
		b.Nil()
		return
	}
	b.List(len(s))
	for _, x := range s {
		key(b, x)
	}
}

// KeyListHead writes a slice's head: Nil for a nil slice, else List and
// its length. The caller writes the elements after it (a nil slice has
// none); only the length is read, so the slice stays where it is.
func KeyListHead[S ~[]E, E any](b *KeyBuilder, s S) {
	if s == nil {
		b.Nil()
		return
	}
	b.List(len(s))
}

// KeyMap writes a map: Nil, or MapStart, an entry per key and value (the
// builder sorts them), MapEnd.
func KeyMap[M ~map[K]V, K comparable, V any](b *KeyBuilder, m M, key func(*KeyBuilder, K), val func(*KeyBuilder, V)) {
	if m == nil {
		b.Nil()
		return
	}
	b.MapStart(len(m))
	for k, v := range m {
		b.MapEntry()
		key(b, k)
		val(b, v)
	}
	b.MapEnd()
}

// EncPtr stores a pointer: nil, or the value enc stores.
func EncPtr[T any](e *Encoder, p *T, enc func(*Encoder, *T)) {
	if p == nil {
		e.Nil()
		return
	}
	e.Ptr()
	enc(e, p)
}

// DecPtr restores a pointer EncPtr stored into *p.
func DecPtr[T any](d *Decoder, p **T, dec func(*Decoder, *T)) {
	if !d.Ptr() {
		*p = nil
		return
	}
	*p = new(T)
	dec(d, *p)
}

// EncList stores a slice: nil, or a list of the values enc stores.
func EncList[S ~[]E, E any](e *Encoder, s S, enc func(*Encoder, *E)) {
	if s == nil {
		e.Nil()
		return
	}
	at := e.List(len(s))
	for i := range s {
		enc(e, &s[i])
	}
	e.End(at)
}

// DecList restores a slice EncList stored into *s.
func DecList[S ~[]E, E any](d *Decoder, s *S, dec func(*Decoder, *E)) {
	if d.Nil() {
		*s = nil
		return
	}
	*s = make(S, d.List())
	for i := range *s {
		dec(d, &(*s)[i])
	}
}

// EncMap stores a map: nil, or its entries in the order of their keys, so
// the same value always has the same bytes. key and val store a key and
// a value by value: (*Encoder).String…
func EncMap[M ~map[K]V, K cmp.Ordered, V any](e *Encoder, m M, key func(*Encoder, K), val func(*Encoder, V)) {
	if m == nil {
		e.Nil()
		return
	}
	at := e.Map(len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		key(e, k)
		val(e, m[k])
	}
	e.End(at)
}

// DecMap restores a map EncMap stored into *m; key and val return a
// key and a value: (*Decoder).String…
func DecMap[M ~map[K]V, K comparable, V any](d *Decoder, m *M, key func(*Decoder) K, val func(*Decoder) V) {
	if d.Nil() {
		*m = nil
		return
	}
	n := d.Map()
	*m = make(M, n)
	for range n {
		k := key(d)
		(*m)[k] = val(d)
	}
}

// DecListHead restores the head of a slice EncList or an inline loop
// stored: nil, or a slice of the stored length, whose elements the caller
// reads after it (a nil slice has none).
func DecListHead[S ~[]E, E any](d *Decoder, s *S) {
	if d.Nil() {
		*s = nil
		return
	}
	*s = make(S, d.List())
}

// Codec is the codec of results of a type whose values enc and dec store
// and restore.
func Codec[T any](enc func(*Encoder, *T), dec func(*Decoder, *T)) TypedCodec[T] {
	return TypedCodec[T]{Encode: enc, Decode: dec}
}

// PtrCodec is the codec of results of type *T, for T's enc and dec.
func PtrCodec[T any](enc func(*Encoder, *T), dec func(*Decoder, *T)) TypedCodec[*T] {
	return TypedCodec[*T]{
		Encode: func(e *Encoder, v **T) { EncPtr(e, *v, enc) },
		Decode: func(d *Decoder, v **T) { DecPtr(d, v, dec) },
	}
}

// ListCodec is the codec of results of type []E, for E's enc and dec.
func ListCodec[E any](enc func(*Encoder, *E), dec func(*Decoder, *E)) TypedCodec[[]E] {
	return TypedCodec[[]E]{
		Encode: func(e *Encoder, v *[]E) { EncList(e, *v, enc) },
		Decode: func(d *Decoder, v *[]E) { DecList(d, v, dec) },
	}
}

// IntCodec is the codec of results of a signed integer type; the decoder
// refuses a stored number that does not fit in bits.
func IntCodec[T ~int | ~int8 | ~int16 | ~int32 | ~int64](bits int) TypedCodec[T] {
	return TypedCodec[T]{
		Encode: func(e *Encoder, v *T) { e.Int(int64(*v)) },
		Decode: func(d *Decoder, v *T) { *v = T(d.Int(bits)) },
	}
}

// UintCodec is the codec of results of an unsigned integer type; the
// decoder refuses a stored number that does not fit in bits.
func UintCodec[T ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr](bits int) TypedCodec[T] {
	return TypedCodec[T]{
		Encode: func(e *Encoder, v *T) { e.Uint(uint64(*v)) },
		Decode: func(d *Decoder, v *T) { *v = T(d.Uint(bits)) },
	}
}

// StringCodec is the codec of results of a string type.
func StringCodec[T ~string]() TypedCodec[T] {
	return TypedCodec[T]{
		Encode: func(e *Encoder, v *T) { e.String(string(*v)) },
		Decode: func(d *Decoder, v *T) { *v = T(d.String()) },
	}
}

// BoolCodec is the codec of results of a boolean type.
func BoolCodec[T ~bool]() TypedCodec[T] {
	return TypedCodec[T]{
		Encode: func(e *Encoder, v *T) { e.Bool(bool(*v)) },
		Decode: func(d *Decoder, v *T) { *v = T(d.Bool()) },
	}
}

// Float64Codec is the codec of results of a float64 type.
func Float64Codec[T ~float64]() TypedCodec[T] {
	return TypedCodec[T]{
		Encode: func(e *Encoder, v *T) { e.Float64(float64(*v)) },
		Decode: func(d *Decoder, v *T) { *v = T(d.Float64()) },
	}
}

// Writers of one value of a basic type, for the combinators above:
// idemimpl.KeyPtr(b, v.Note, idemimpl.KeyString). Each writes what the
// builder's, encoder's or decoder's method of its kind does.

// KeyString writes *v as KeyBuilder.String does.
func KeyString[T ~string](b *KeyBuilder, v *T) { b.String(string(*v)) }

// KeyBool writes *v as KeyBuilder.Bool does.
func KeyBool[T ~bool](b *KeyBuilder, v *T) { b.Bool(bool(*v)) }

// KeyInt writes *v as KeyBuilder.Int does.
func KeyInt[T ~int | ~int8 | ~int16 | ~int32 | ~int64](b *KeyBuilder, v *T) {
	b.Int(int64(*v))
}

// KeyUint writes *v as KeyBuilder.Uint does.
func KeyUint[T ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr](b *KeyBuilder, v *T) {
	b.Uint(uint64(*v))
}

// KeyFloat writes *v as KeyBuilder.Float does.
func KeyFloat[T ~float32 | ~float64](b *KeyBuilder, v *T) { b.Float(float64(*v)) }

// The same writers by value, for KeyList and KeyMap:
// idemimpl.KeyMap(b, v.Meta, idemimpl.StringKey, idemimpl.IntKey).

// StringKey writes v as KeyBuilder.String does.
func StringKey[T ~string](b *KeyBuilder, v T) { b.String(string(v)) }

// BoolKey writes v as KeyBuilder.Bool does.
func BoolKey[T ~bool](b *KeyBuilder, v T) { b.Bool(bool(v)) }

// IntKey writes v as KeyBuilder.Int does.
func IntKey[T ~int | ~int8 | ~int16 | ~int32 | ~int64](b *KeyBuilder, v T) {
	b.Int(int64(v))
}

// UintKey writes v as KeyBuilder.Uint does.
func UintKey[T ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr](b *KeyBuilder, v T) {
	b.Uint(uint64(v))
}

// FloatKey writes v as KeyBuilder.Float does.
func FloatKey[T ~float32 | ~float64](b *KeyBuilder, v T) { b.Float(float64(v)) }

// EncString encodes *v as Encoder.String does.
func EncString[T ~string](e *Encoder, v *T) { e.String(string(*v)) }

// DecString decodes what EncString wrote into *v.
func DecString[T ~string](d *Decoder, v *T) { *v = T(d.String()) }

// EncBool encodes *v as Encoder.Bool does.
func EncBool[T ~bool](e *Encoder, v *T) { e.Bool(bool(*v)) }

// DecBool decodes what EncBool wrote into *v.
func DecBool[T ~bool](d *Decoder, v *T) { *v = T(d.Bool()) }

// EncFloat64 encodes *v as Encoder.Float64 does.
func EncFloat64[T ~float64](e *Encoder, v *T) { e.Float64(float64(*v)) }

// DecFloat64 decodes what EncFloat64 wrote into *v.
func DecFloat64[T ~float64](d *Decoder, v *T) { *v = T(d.Float64()) }
