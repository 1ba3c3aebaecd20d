// The re-exports of runtime/internal/impl (see doc.go).

package idemimpl

import (
	"cmp"
	"context"
	"reflect"

	"github.com/idemgen/idemgen/runtime/internal/impl"
)

const (
	// CodecMarker is the first byte of a record a generated codec wrote.
	// No encoding/json document starts with it, so records of an older
	// build (written by the Guard's codec) are told apart.
	CodecMarker = impl.CodecMarker
	// CodecVersion is the format version, the record's second byte.
	CodecVersion = impl.CodecVersion
	// DeadlineSlack is how close to a ctx's deadline a client's timeout
	// counts as that deadline's: a client that bounds its I/O by the ctx's
	// deadline (go-redis with ContextTimeoutEnabled, a dialer) can notice it
	// a moment before the ctx's own timer fires, while ctx.Err() is still
	// nil. A store that stalls until its own timeout, further from the
	// caller's deadline than this, is still an unavailable store.
	DeadlineSlack = impl.DeadlineSlack
	// The envelope of a record a Guard transformed: EnvelopeMarker, its
	// version, a flags byte, then the record (the identity header and body),
	// compressed and then sealed as the flags say. No record of another form
	// starts with EnvelopeMarker (see RecordMarker).
	EnvelopeMarker = impl.EnvelopeMarker
	// MaxDepth bounds how deeply the values of recursive types nest in a
	// record, in both directions: a cyclic result (a list whose tail points
	// back) is not encodable instead of overflowing the stack after the
	// function ran, and a record nested deeper (corrupt, or written by
	// something else) is ErrCorruptRecord instead of a stack overflow at
	// decoding. encoding/json's decoder has the same bound.
	MaxDepth = impl.MaxDepth
	// MaxIDLen is the longest caller-supplied ID (KeyBuilder.ID).
	MaxIDLen = impl.MaxIDLen
	// MaxInflated bounds what a compressed record may inflate to when its
	// function has no budget: a hostile store writer cannot make a reader
	// allocate more than the largest record a store keeps.
	MaxInflated = impl.MaxInflated
	// RecordMarker is the first byte of a record that carries its
	// function's identity. No encoding/json document and no generated
	// codec's record (CodecMarker) starts with it.
	RecordMarker = impl.RecordMarker
	// RecordVersion is the header's layout version, the record's second
	// byte.
	RecordVersion = impl.RecordVersion
)

var (
	// The errors of this package's own checks. runtime/idem exports the same
	// values under the same names; test for them there.
	ErrCorruptRecord = impl.ErrCorruptRecord
	// The errors of this package's own checks. runtime/idem exports the same
	// values under the same names; test for them there.
	ErrInvalidKey = impl.ErrInvalidKey
	// The errors of this package's own checks. runtime/idem exports the same
	// values under the same names; test for them there.
	ErrResultIncompatible = impl.ErrResultIncompatible
)

// Decoder reads a value written by Encoder. Generated code calls it; the
// first error sticks (later reads return zero values) and is reported at
// the end: ErrCorruptRecord for bytes that are not a record,
// ErrResultIncompatible for a value of another shape than the Go type
// expects.
type Decoder = impl.Decoder

// Encoder writes a value in the generated codecs' format. Generated code
// calls it; errors (a failing marshaler) are kept and reported at the end.
type Encoder = impl.Encoder

// ErrorTypes are the error types and sentinel errors that a generated
// codec restores as themselves when a result holds them in a value of
// type error: a generated file implements it (idemErrors) for those of
// the packages its results come from.
type ErrorTypes = impl.ErrorTypes

// KeyBuilder accumulates the canonical encoding of a key and hashes it with
// SHA-256. Generated code writes into it field by field; Keyer
// implementations do the same. Builders are pooled by the Guard, so
// deriving a key does not allocate.
//
// Errors (a NaN, a failing marshaler, an invalid caller ID) are sticky: the
// first is reported when the call starts and the function does not run.
type KeyBuilder = impl.KeyBuilder

// Keyer is idem.Keyer: types that name their own key, a value keyed as
// Any keys it.
type Keyer = impl.Keyer

// Material is the key material of one guarded call, which generated code
// writes between idemimpl.Begin and idem.Do: the key, the payload
// fingerprint when key= names a subset of the arguments, and an ordered
// function's entity and event time. Its memory is the Guard's, pooled:
// it is written only before the call is handed to Do.
type Material = impl.Material

// RecordHeader is the identity a record carries: the Signature of the
// Spec that wrote it (its name and version are in the record's key).
type RecordHeader = impl.RecordHeader

// Sealer encrypts stored records with authenticated encryption: the
// method set of idem.Sealer, which a Guard hands to its Transform.
type Sealer = impl.Sealer

// A Struct is a struct value being read: Decoder.Struct begins it,
// Decoder.Field finds its fields by name, Decoder.End finishes it.
type Struct = impl.Struct

// Transform is how a Guard stores records: compressed when CompressMin is
// set and the record is at least that long (and compression makes it
// smaller), sealed when Sealer is set. The zero Transform stores records
// as they are.
type Transform = impl.Transform

// TypedCodec is the Codec of one result type T, built from the encode and
// decode functions idemgen generates for T; a generated wrapper puts it in
// its idem.Spec (Spec.Codec). Its records start with CodecMarker and
// CodecVersion.
type TypedCodec[T any] = impl.TypedCodec[T]

// AppendHeader appends the identity header of a record written under
// signature to b.
func AppendHeader(b []byte, signature string) []byte { return impl.AppendHeader(b, signature) }

// BoolCodec is the codec of results of a boolean type.
func BoolCodec[T ~bool]() TypedCodec[T] { return impl.BoolCodec[T]() }

// BoolKey writes v as KeyBuilder.Bool does.
func BoolKey[T ~bool](b *KeyBuilder, v T) { impl.BoolKey[T](b, v) }

// Codec is the codec of results of a type whose values enc and dec store
// and restore.
func Codec[T any](enc func(*Encoder, *T), dec func(*Decoder, *T)) TypedCodec[T] {
	return impl.Codec[T](enc, dec)
}

// CtxErr returns the error of ctx that err, a store client's error, is
// owed to, or nil: ctx.Err() once ctx is done, and
// context.DeadlineExceeded when err is a timeout and ctx's deadline has
// passed or is at most DeadlineSlack away. Stores class an error with it
// before calling it an outage, so a caller's deadline is never reported
// as an unavailable store (which a fail-open Guard would run through).
func CtxErr(ctx context.Context, err error) error { return impl.CtxErr(ctx, err) }

// DeadlineDue returns context.DeadlineExceeded when ctx's deadline has
// passed or is at most DeadlineSlack away, whether or not ctx is done yet.
func DeadlineDue(ctx context.Context) error { return impl.DeadlineDue(ctx) }

// DecBool decodes what EncBool wrote into *v.
func DecBool[T ~bool](d *Decoder, v *T) { impl.DecBool[T](d, v) }

// DecFloat64 decodes what EncFloat64 wrote into *v.
func DecFloat64[T ~float64](d *Decoder, v *T) { impl.DecFloat64[T](d, v) }

// DecList restores a slice EncList stored into *s.
func DecList[S ~[]E, E any](d *Decoder, s *S, dec func(*Decoder, *E)) { impl.DecList[S, E](d, s, dec) }

// DecListHead restores the head of a slice EncList or an inline loop
// stored: nil, or a slice of the stored length, whose elements the caller
// reads after it (a nil slice has none).
func DecListHead[S ~[]E, E any](d *Decoder, s *S) { impl.DecListHead[S, E](d, s) }

// DecMap restores a map EncMap stored into *m; key and val return a
// key and a value: (*Decoder).String…
func DecMap[M ~map[K]V, K comparable, V any](d *Decoder, m *M, key func(*Decoder) K, val func(*Decoder) V) {
	impl.DecMap[M, K, V](d, m, key, val)
}

// DecPtr restores a pointer EncPtr stored into *p.
func DecPtr[T any](d *Decoder, p **T, dec func(*Decoder, *T)) { impl.DecPtr[T](d, p, dec) }

// DecString decodes what EncString wrote into *v.
func DecString[T ~string](d *Decoder, v *T) { impl.DecString[T](d, v) }

// DecodeRecord checks data's marker and version and runs decode over the
// value it holds, which must use all of data.
func DecodeRecord(data []byte, decode func(d *Decoder)) error { return impl.DecodeRecord(data, decode) }

// EncBool encodes *v as Encoder.Bool does.
func EncBool[T ~bool](e *Encoder, v *T) { impl.EncBool[T](e, v) }

// EncFloat64 encodes *v as Encoder.Float64 does.
func EncFloat64[T ~float64](e *Encoder, v *T) { impl.EncFloat64[T](e, v) }

// EncList stores a slice: nil, or a list of the values enc stores.
func EncList[S ~[]E, E any](e *Encoder, s S, enc func(*Encoder, *E)) { impl.EncList[S, E](e, s, enc) }

// EncMap stores a map: nil, or its entries in the order of their keys, so
// the same value always has the same bytes. key and val store a key and
// a value by value: (*Encoder).String…
func EncMap[M ~map[K]V, K cmp.Ordered, V any](e *Encoder, m M, key func(*Encoder, K), val func(*Encoder, V)) {
	impl.EncMap[M, K, V](e, m, key, val)
}

// EncPtr stores a pointer: nil, or the value enc stores.
func EncPtr[T any](e *Encoder, p *T, enc func(*Encoder, *T)) { impl.EncPtr[T](e, p, enc) }

// EncString encodes *v as Encoder.String does.
func EncString[T ~string](e *Encoder, v *T) { impl.EncString[T](e, v) }

// Float64Codec is the codec of results of a float64 type.
func Float64Codec[T ~float64]() TypedCodec[T] { return impl.Float64Codec[T]() }

// FloatKey writes v as KeyBuilder.Float does.
func FloatKey[T ~float32 | ~float64](b *KeyBuilder, v T) { impl.FloatKey[T](b, v) }

// HeaderLen is the length of AppendHeader's output for signature.
func HeaderLen(signature string) int { return impl.HeaderLen(signature) }

// IntCodec is the codec of results of a signed integer type; the decoder
// refuses a stored number that does not fit in bits.
func IntCodec[T ~int | ~int8 | ~int16 | ~int32 | ~int64](bits int) TypedCodec[T] {
	return impl.IntCodec[T](bits)
}

// IntKey writes v as KeyBuilder.Int does.
func IntKey[T ~int | ~int8 | ~int16 | ~int32 | ~int64](b *KeyBuilder, v T) { impl.IntKey[T](b, v) }

// IsNil reports whether v is nil: a nil interface, or a nil pointer, map,
// slice, channel or func. The generated wrapper of a generic function
// writes the nil marker for such a value of a type parameter (an
// interface or pointer type argument) instead of calling its key method
// on it, as it does for a nil value of a concrete type.
func IsNil(v any) bool { return impl.IsNil(v) }

// IsTimeout reports whether err is a timeout: a deadline exceeded (a
// ctx's, a net.Conn's, an os.File's) or any error whose Timeout method
// says so (net.Error).
func IsTimeout(err error) bool { return impl.IsTimeout(err) }

// KeyBool writes *v as KeyBuilder.Bool does.
func KeyBool[T ~bool](b *KeyBuilder, v *T) { impl.KeyBool[T](b, v) }

// KeyFloat writes *v as KeyBuilder.Float does.
func KeyFloat[T ~float32 | ~float64](b *KeyBuilder, v *T) { impl.KeyFloat[T](b, v) }

// KeyInt writes *v as KeyBuilder.Int does.
func KeyInt[T ~int | ~int8 | ~int16 | ~int32 | ~int64](b *KeyBuilder, v *T) { impl.KeyInt[T](b, v) }

// KeyList writes a slice: Nil, or List and each element, by value.
func KeyList[S ~[]E, E any](b *KeyBuilder, s S, key func(*KeyBuilder, E)) {
	impl.KeyList[S, E](b, s, key)
}

// KeyListHead writes a slice's head: Nil for a nil slice, else List and
// its length. The caller writes the elements after it (a nil slice has
// none); only the length is read, so the slice stays where it is.
func KeyListHead[S ~[]E, E any](b *KeyBuilder, s S) { impl.KeyListHead[S, E](b, s) }

// KeyMap writes a map: Nil, or MapStart, an entry per key and value (the
// builder sorts them), MapEnd.
func KeyMap[M ~map[K]V, K comparable, V any](b *KeyBuilder, m M, key func(*KeyBuilder, K), val func(*KeyBuilder, V)) {
	impl.KeyMap[M, K, V](b, m, key, val)
}

// KeyPtr writes a pointer: Nil, or Ptr and the value key writes.
func KeyPtr[T any](b *KeyBuilder, p *T, key func(*KeyBuilder, *T)) { impl.KeyPtr[T](b, p, key) }

// KeyString writes *v as KeyBuilder.String does.
func KeyString[T ~string](b *KeyBuilder, v *T) { impl.KeyString[T](b, v) }

// KeyUint writes *v as KeyBuilder.Uint does.
func KeyUint[T ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr](b *KeyBuilder, v *T) {
	impl.KeyUint[T](b, v)
}

// ListCodec is the codec of results of type []E, for E's enc and dec.
func ListCodec[E any](enc func(*Encoder, *E), dec func(*Decoder, *E)) TypedCodec[[]E] {
	return impl.ListCodec[E](enc, dec)
}

// OwnRecord returns the body of data when data starts with exactly the
// header AppendHeader writes for signature, for a signature under 128
// bytes (a one-byte length), in straight-line code: a replay's usual
// case, checked without parsing. Any other record goes to SplitRecord.
func OwnRecord(signature string, data []byte) ([]byte, bool) { return impl.OwnRecord(signature, data) }

// PtrCodec is the codec of results of type *T, for T's enc and dec.
func PtrCodec[T any](enc func(*Encoder, *T), dec func(*Decoder, *T)) TypedCodec[*T] {
	return impl.PtrCodec[T](enc, dec)
}

// Sealed reports whether data is a sealed record.
func Sealed(data []byte) bool { return impl.Sealed(data) }

// SplitRecord returns the identity header of a stored record (a completed
// result or a recorded failure) and the body that follows it. ok is false
// for a record written before records carried a header: body is then data
// itself. A header that does not parse is ErrCorruptRecord. Operator
// tools use it to show who wrote a record and to read a failure's JSON.
func SplitRecord(data []byte) (h RecordHeader, body []byte, ok bool, err error) {
	return impl.SplitRecord(data)
}

// StringCodec is the codec of results of a string type.
func StringCodec[T ~string]() TypedCodec[T] { return impl.StringCodec[T]() }

// StringKey writes v as KeyBuilder.String does.
func StringKey[T ~string](b *KeyBuilder, v T) { impl.StringKey[T](b, v) }

// TypeIdentity is the identity that KeyBuilder.Type writes for t; "nil"
// for a nil reflect.Type.
func TypeIdentity(t reflect.Type) string { return impl.TypeIdentity(t) }

// UintCodec is the codec of results of an unsigned integer type; the
// decoder refuses a stored number that does not fit in bits.
func UintCodec[T ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr](bits int) TypedCodec[T] {
	return impl.UintCodec[T](bits)
}

// UintKey writes v as KeyBuilder.Uint does.
func UintKey[T ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr](b *KeyBuilder, v T) {
	impl.UintKey[T](b, v)
}
