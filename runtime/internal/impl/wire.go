package impl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
)

// The binary format of generated result codecs (see TypedCodec).
//
// A record is the marker byte, the format version, then one value (the
// Guard stores it behind its function's identity header: identity.go). Every
// value starts with a kind byte, so a decoder can tell a value it expects
// from one of another shape, and skip a value it does not know:
//
//	nil      0x00                        nil pointer, slice, map or []byte
//	ptr      0x01 value                  a non-nil pointer
//	uint     0x02 uvarint                unsigned integers, bool
//	int      0x03 zigzag varint          signed integers
//	float64  0x04 8 bytes (LE bits)      bit-exact: NaN payloads, ±Inf, -0
//	float32  0x05 4 bytes (LE bits)
//	bytes    0x06 uvarint len, bytes     string, []byte, marshaled values
//	list     0x07 u32 len, uvarint n, n values          slices, arrays
//	map      0x08 u32 len, uvarint n, n key+value pairs
//	struct   0x09 u32 len, fields: uvarint len, name, value
//	complex  0x0a 16 bytes (two float64)
//	dynamic  0x0b type code, value         a value held in an any (dynamic.go)
//
// Struct fields are tagged by name, so a record written before a field
// was added decodes with that field zero, and a field that was removed is
// skipped. A field whose stored kind differs from the kind its Go type
// expects (its type changed) is ErrResultIncompatible.
const (
	// CodecMarker is the first byte of a record a generated codec wrote.
	// No encoding/json document starts with it, so records of an older
	// build (written by the Guard's codec) are told apart.
	CodecMarker byte = 0xb1
	// CodecVersion is the format version, the record's second byte.
	CodecVersion byte = 1
)

const (
	kNil byte = iota
	kPtr
	kUint
	kInt
	kFloat64
	kFloat32
	kBytes
	kList
	kMap
	kStruct
	kComplex
	kDynamic
)

var kindNames = [...]string{"nil", "pointer", "unsigned integer", "integer", "float64", "float32", "bytes", "list", "map", "struct", "complex", "dynamic value"}

func kindName(k byte) string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind %#x", k)
}

// Encoder writes a value in the generated codecs' format. Generated code
// calls it; errors (a failing marshaler) are kept and reported at the end.
type Encoder struct {
	buf   []byte
	err   error
	depth depth // Enter's count of nested recursive values
}

// MaxDepth bounds how deeply the values of recursive types nest in a
// record, in both directions: a cyclic result (a list whose tail points
// back) is not encodable instead of overflowing the stack after the
// function ran, and a record nested deeper (corrupt, or written by
// something else) is ErrCorruptRecord instead of a stack overflow at
// decoding. encoding/json's decoder has the same bound.
const MaxDepth = 10000

// depth counts the nested values of recursive types a KeyBuilder,
// Encoder or Decoder is inside of.
type depth int

// enter counts one more level, unless an error is recorded in *err
// (unwind at once: a cycle through several fields would otherwise be
// walked path by path) or the level would pass MaxDepth: then it records
// tooDeep. False means an error is recorded and Leave is not due.
func (n *depth) enter(err *error, tooDeep error) bool {
	if *err == nil && *n >= MaxDepth {
		*err = tooDeep
	}
	if *err != nil {
		return false
	}
	*n++
	return true
}

// Enter is called by the generated encoder of a recursive type before it
// writes a value, and Leave after: false means the value is not to be
// written (too deep, or an error already recorded), and Leave is not
// due.
func (e *Encoder) Enter() bool { return e.depth.enter(&e.err, errResultTooDeep) }

var errResultTooDeep = fmt.Errorf("result nested deeper than %d levels (a cyclic value?)", MaxDepth)

// Leave ends what Enter began.
func (e *Encoder) Leave() { e.depth-- }

// Fail records err (the first one wins).
func (e *Encoder) Fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// Nil writes a nil pointer, slice, map or []byte.
func (e *Encoder) Nil() { e.buf = append(e.buf, kNil) }

// Ptr starts a non-nil pointer: its element's value follows.
func (e *Encoder) Ptr() { e.buf = append(e.buf, kPtr) }

// Bool writes a bool.
func (e *Encoder) Bool(v bool) {
	b := uint64(0)
	if v {
		b = 1
	}
	e.Uint(b)
}

// Int writes a signed integer.
func (e *Encoder) Int(v int64) {
	e.buf = append(e.buf, kInt)
	e.buf = binary.AppendVarint(e.buf, v)
}

// Uint writes an unsigned integer.
func (e *Encoder) Uint(v uint64) {
	e.buf = append(e.buf, kUint)
	e.buf = binary.AppendUvarint(e.buf, v)
}

// Float64 writes v's bits: NaN, ±Inf and -0 come back as they were.
func (e *Encoder) Float64(v float64) {
	e.buf = append(e.buf, kFloat64)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(v))
}

// Float32 writes v's bits.
func (e *Encoder) Float32(v float32) {
	e.buf = append(e.buf, kFloat32)
	e.buf = binary.LittleEndian.AppendUint32(e.buf, math.Float32bits(v))
}

// Complex writes a complex number (complex64 widened exactly).
func (e *Encoder) Complex(v complex128) {
	e.buf = append(e.buf, kComplex)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(real(v)))
	e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(imag(v)))
}

// String writes a string.
func (e *Encoder) String(s string) {
	e.buf = append(e.buf, kBytes)
	e.buf = binary.AppendUvarint(e.buf, uint64(len(s)))
	e.buf = append(e.buf, s...)
}

// Bytes writes a []byte; nil stays nil, empty stays empty.
func (e *Encoder) Bytes(b []byte) {
	if b == nil {
		e.Nil()
		return
	}
	e.buf = append(e.buf, kBytes)
	e.buf = binary.AppendUvarint(e.buf, uint64(len(b)))
	e.buf = append(e.buf, b...)
}

// Marshaled writes what a marshaling method returned (MarshalBinary,
// MarshalJSON, proto.Marshal), or records its error.
func (e *Encoder) Marshaled(b []byte, err error) {
	if err != nil {
		e.Fail(err)
		return
	}
	e.buf = append(e.buf, kBytes)
	e.buf = binary.AppendUvarint(e.buf, uint64(len(b)))
	e.buf = append(e.buf, b...)
}

func (e *Encoder) begin(k byte) int {
	e.buf = append(e.buf, k, 0, 0, 0, 0)
	return len(e.buf)
}

// List starts a slice or array of n elements; write n values, then End.
func (e *Encoder) List(n int) int {
	at := e.begin(kList)
	e.buf = binary.AppendUvarint(e.buf, uint64(n))
	return at
}

// Map starts a map of n entries; write n key, value pairs, then End.
func (e *Encoder) Map(n int) int {
	at := e.begin(kMap)
	e.buf = binary.AppendUvarint(e.buf, uint64(n))
	return at
}

// Struct starts a struct; write Field and a value per field, then End.
func (e *Encoder) Struct() int { return e.begin(kStruct) }

// Field names the struct field whose value follows, and returns e for
// the value's call: e.Field("ID").String(v.ID).
func (e *Encoder) Field(name string) *Encoder {
	e.buf = binary.AppendUvarint(e.buf, uint64(len(name)))
	e.buf = append(e.buf, name...)
	return e
}

// End closes the list, map or struct List, Map or Struct started at at.
func (e *Encoder) End(at int) {
	n := len(e.buf) - at
	if uint64(n) > math.MaxUint32 {
		e.Fail(errors.New("idem: a value over 4 GiB"))
		return
	}
	binary.LittleEndian.PutUint32(e.buf[at-4:at], uint32(n))
}

// Decoder reads a value written by Encoder. Generated code calls it; the
// first error sticks (later reads return zero values) and is reported at
// the end: ErrCorruptRecord for bytes that are not a record,
// ErrResultIncompatible for a value of another shape than the Go type
// expects.
type Decoder struct {
	b     []byte
	off   int
	err   error
	depth depth // Enter's count of nested recursive values
	// absent: the field Field looked up is not in the record, and the
	// reads of its value return the zero value (nil, false, 0, "", no
	// elements) until the next Field or End.
	absent bool
}

// Enter is called by the generated decoder of a recursive type before it
// reads a value, and Leave after: false means the value is not to be read
// (nested deeper than MaxDepth: ErrCorruptRecord, or an error already
// recorded), and Leave is not due.
func (d *Decoder) Enter() bool {
	if d.err == nil && d.depth >= MaxDepth { // the error names the offset
		d.corrupt(fmt.Sprintf("values nested deeper than %d levels", MaxDepth))
	}
	return d.depth.enter(&d.err, nil)
}

// Leave ends what Enter began.
func (d *Decoder) Leave() { d.depth-- }

// Err is the first error met, if any.
func (d *Decoder) Err() error { return d.err }

// Fail records err (the first one wins).
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *Decoder) corrupt(what string) {
	d.Fail(fmt.Errorf("%w: %s at byte %d", ErrCorruptRecord, what, d.off))
	d.off = len(d.b)
}

func (d *Decoder) mismatch(got byte, want string) {
	d.Fail(fmt.Errorf("%w: stored %s where the result type now has %s (byte %d); bump version= for a fresh key space", ErrResultIncompatible, kindName(got), want, d.off))
	d.off = len(d.b)
}

func (d *Decoder) peek() (byte, bool) {
	if d.err != nil || d.absent {
		return 0, false
	}
	if d.off >= len(d.b) {
		d.corrupt("truncated")
		return 0, false
	}
	return d.b[d.off], true
}

// take reads the kind byte if it is want.
func (d *Decoder) take(want byte) bool {
	k, ok := d.peek()
	if !ok {
		return false
	}
	if k != want {
		if k > kDynamic {
			d.corrupt("unknown kind")
		} else {
			d.mismatch(k, kindName(want))
		}
		return false
	}
	d.off++
	return true
}

func (d *Decoder) uvarint() uint64 { return readVarint(d, binary.Uvarint) }

func (d *Decoder) varint() int64 { return readVarint(d, binary.Varint) }

// readVarint reads a varint with read (binary.Uvarint or binary.Varint).
func readVarint[T int64 | uint64](d *Decoder, read func([]byte) (T, int)) T {
	v, n := read(d.b[d.off:])
	if n <= 0 {
		d.corrupt("bad varint")
		return 0
	}
	d.off += n
	return v
}

func (d *Decoder) fixed(n int) []byte {
	if len(d.b)-d.off < n {
		d.corrupt("truncated")
		return make([]byte, n)
	}
	b := d.b[d.off : d.off+n]
	d.off += n
	return b
}

// Nil reports whether a nil slice, map or []byte is next, and reads it.
func (d *Decoder) Nil() bool {
	if d.absent {
		return true
	}
	k, ok := d.peek()
	if ok && k == kNil {
		d.off++
		return true
	}
	return false
}

// Ptr reads a pointer's marker: true if a non-nil pointer's element
// follows, false for nil.
func (d *Decoder) Ptr() bool {
	k, ok := d.peek()
	if !ok {
		return false
	}
	switch k {
	case kNil:
		d.off++
		return false
	case kPtr:
		d.off++
		return true
	}
	d.take(kPtr) // reports the mismatch
	return false
}

// whole reads an integer written signed or unsigned: its bits as a
// uint64, whether it is negative (then u holds the int64's bits) and the
// kind it was written as. ok is false, the mismatch reported, where the
// next value is no integer.
func (d *Decoder) whole(want byte) (u uint64, neg bool, k byte, ok bool) {
	k, ok = d.peek()
	if !ok {
		return 0, false, k, false
	}
	switch k {
	case kInt:
		d.off++
		i := d.varint()
		return uint64(i), i < 0, k, true
	case kUint:
		d.off++
		return d.uvarint(), false, k, true
	}
	d.take(want) // reports the mismatch
	return 0, false, k, false
}

// Int reads a signed integer that must fit in bits.
func (d *Decoder) Int(bits int) int64 {
	u, neg, k, ok := d.whole(kInt)
	if !ok {
		return 0
	}
	if !neg && u > math.MaxInt64 {
		d.mismatch(k, fmt.Sprintf("int%d", bits))
		return 0
	}
	v := int64(u)
	if bits < 64 && (v < -1<<(bits-1) || v > 1<<(bits-1)-1) {
		d.mismatch(k, fmt.Sprintf("int%d (the value %d does not fit)", bits, v))
		return 0
	}
	return v
}

// Uint reads an unsigned integer that must fit in bits.
func (d *Decoder) Uint(bits int) uint64 {
	v, neg, k, ok := d.whole(kUint)
	if !ok {
		return 0
	}
	if neg {
		d.mismatch(k, fmt.Sprintf("uint%d (the value %d is negative)", bits, int64(v)))
		return 0
	}
	if bits < 64 && v > 1<<bits-1 {
		d.mismatch(k, fmt.Sprintf("uint%d (the value %d does not fit)", bits, v))
		return 0
	}
	return v
}

// Bool reads a bool.
func (d *Decoder) Bool() bool {
	k, _ := d.peek()
	v := d.Uint(64)
	if v > 1 {
		d.mismatch(k, "bool")
	}
	return v == 1
}

// Float64 reads a float64 (a stored float32 widens exactly).
func (d *Decoder) Float64() float64 {
	if k, ok := d.peek(); ok && k == kFloat32 {
		return float64(d.Float32())
	}
	if !d.take(kFloat64) {
		return 0
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(d.fixed(8)))
}

// Float32 reads a float32.
func (d *Decoder) Float32() float32 {
	if !d.take(kFloat32) {
		return 0
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(d.fixed(4)))
}

// Complex reads a complex number.
func (d *Decoder) Complex() complex128 {
	if !d.take(kComplex) {
		return 0
	}
	b := d.fixed(16)
	return complex(math.Float64frombits(binary.LittleEndian.Uint64(b)), math.Float64frombits(binary.LittleEndian.Uint64(b[8:])))
}

// raw reads the payload of a bytes value (the record's own bytes).
func (d *Decoder) raw() []byte {
	if !d.take(kBytes) {
		return nil
	}
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)-d.off) {
		d.corrupt("length past the end")
		return nil
	}
	b := d.b[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return b
}

// String reads a string.
func (d *Decoder) String() string { return string(d.raw()) }

// Bytes reads a []byte (a copy); nil stays nil, empty stays empty.
func (d *Decoder) Bytes() []byte {
	if d.Nil() {
		return nil
	}
	b := d.raw()
	if d.err != nil {
		return nil
	}
	return append([]byte{}, b...)
}

// Marshaled reads the bytes a marshaling method wrote, for its
// Unmarshal method (which must copy what it keeps, as encoding's
// interfaces require).
func (d *Decoder) Marshaled() []byte {
	b := d.raw()
	if b == nil {
		b = []byte{}
	}
	return b
}

// Unmarshaled records the error of an unmarshaling method as a corrupt
// record. The value of a field the record does not hold is given no bytes,
// and the method's error is ignored: the field keeps what the method left,
// its zero value for the standard library's types.
func (d *Decoder) Unmarshaled(err error) {
	if err != nil && !d.absent {
		d.Fail(fmt.Errorf("%w: %w", ErrCorruptRecord, err))
	}
}

// open reads a list, map or struct header; it returns where it ends.
func (d *Decoder) open(k byte) int {
	if !d.take(k) {
		return d.off
	}
	n := binary.LittleEndian.Uint32(d.fixed(4))
	if d.err != nil {
		return d.off
	}
	if uint64(n) > uint64(len(d.b)-d.off) {
		d.corrupt("length past the end")
		return d.off
	}
	return d.off + int(n)
}

func (d *Decoder) count(end int, perItem int) int {
	if d.err != nil || d.absent {
		return 0
	}
	n := d.uvarint()
	if d.err == nil && (d.off > end || n > uint64((end-d.off)/perItem)) {
		d.corrupt("count past the end")
		return 0
	}
	return int(n)
}

// List reads a slice's or array's header: the number of elements that follow.
func (d *Decoder) List() int {
	end := d.open(kList)
	return d.count(end, 1)
}

// Array reads an array's header; the stored length must be n. It is false
// for an array the record does not hold, whose elements stay zero.
func (d *Decoder) Array(n int) bool {
	if d.absent {
		return false
	}
	at := d.off
	got := d.List()
	if d.err == nil && got != n {
		d.off = at
		d.mismatch(kList, fmt.Sprintf("an array of %d (stored %d elements)", n, got))
		return false
	}
	return d.err == nil
}

// Map reads a map's header: the number of key, value pairs that follow.
func (d *Decoder) Map() int {
	end := d.open(kMap)
	return d.count(end, 2)
}

// A Struct is a struct value being read: Decoder.Struct begins it,
// Decoder.Field finds its fields by name, Decoder.End finishes it.
type Struct struct{ start, end int }

// Struct reads a struct's header: read its fields with Field, then End.
func (d *Decoder) Struct() Struct {
	if d.absent {
		return Struct{d.off, d.off} // a struct the record does not hold: no fields
	}
	end := d.open(kStruct)
	return Struct{d.off, end}
}

// Field finds the field name of s and returns d, at its value, for the
// read that follows: d.Field(s, "ID").String(). Fields are usually read in
// the order they were written, and the next one is looked at first; any
// other is searched for. A field s does not hold (the record was written
// before the field was added) reads as its zero value; a field the type no
// longer has is never looked up, and End skips it.
func (d *Decoder) Field(s Struct, name string) *Decoder {
	d.absent = false
	if d.err != nil {
		return d
	}
	if d.off < s.start || d.off > s.end {
		d.corrupt("field past the end of its struct")
		return d
	}
	at := d.off
	if v, ok := d.fieldAt(s, at, name); ok {
		d.off = v
		return d
	}
	for off := s.start; off < s.end && d.err == nil; {
		v, ok := d.fieldAt(s, off, name)
		if ok {
			d.off = v
			return d
		}
		d.off = v
		d.Skip() // the value of another field
		off = d.off
	}
	if d.err == nil && d.off > s.end {
		d.corrupt("field past the end of its struct")
	}
	if d.err == nil {
		d.off, d.absent = at, true
	}
	return d
}

// Present reports whether the field Field looked up last is in the record.
func (d *Decoder) Present() bool { return !d.absent && d.err == nil }

// fieldAt reads the name of the field at off in s: where its value
// starts, and whether the name is name. At the end of s, it is false.
func (d *Decoder) fieldAt(s Struct, off int, name string) (int, bool) {
	if off >= s.end {
		return off, false
	}
	n, w := binary.Uvarint(d.b[off:s.end])
	if w <= 0 || n > uint64(s.end-off-w) {
		d.corrupt("bad field name")
		return off, false
	}
	start := off + w
	return start + int(n), string(d.b[start:start+int(n)]) == name
}

// End finishes reading s: the fields no Field call read are skipped.
func (d *Decoder) End(s Struct) {
	d.absent = false
	if d.err != nil {
		return
	}
	if d.off > s.end {
		d.corrupt("field past the end of its struct")
		return
	}
	d.off = s.end
}

// Skip reads over one value of any kind: a field the result type no
// longer has.
func (d *Decoder) Skip() {
	for {
		k, ok := d.peek()
		if !ok {
			return
		}
		d.off++
		switch k {
		case kNil:
		case kPtr:
			continue
		case kDynamic:
			if c := d.fixed(1); d.err != nil || c[0] == 0 || c[0] > dynLast {
				d.corrupt("unknown dynamic type")
				return
			}
			continue
		case kUint:
			d.uvarint()
		case kInt:
			d.varint()
		case kFloat64:
			d.fixed(8)
		case kFloat32:
			d.fixed(4)
		case kComplex:
			d.fixed(16)
		case kBytes:
			d.off--
			d.raw()
		case kList, kMap, kStruct:
			d.off--
			d.off = d.open(k)
		default:
			d.off--
			d.corrupt("unknown kind")
		}
		return
	}
}

// TypedCodec is the Codec of one result type T, built from the encode and
// decode functions idemgen generates for T; a generated wrapper puts it in
// its idem.Spec (Spec.Codec). Its records start with CodecMarker and
// CodecVersion.
type TypedCodec[T any] struct {
	Encode func(e *Encoder, v *T)
	Decode func(d *Decoder, v *T)
}

// Marshal encodes v, a T (or a *T), into a slice of exactly the
// record's length: the store keeps it, often for hours, so it holds no
// spare capacity and no pointers for the collector to scan. The encoder
// that builds it is pooled.
func (c TypedCodec[T]) Marshal(v any) ([]byte, error) { return c.marshal(v, "", false) }

// MarshalRecord is Marshal with the identity header of signature before
// the record (AppendHeader): the header is written into the pooled
// encoder's buffer, so the record costs no more allocations than
// Marshal's.
func (c TypedCodec[T]) MarshalRecord(signature string, v any) ([]byte, error) {
	return c.marshal(v, signature, true)
}

// marshal encodes v, behind signature's identity header if headed.
func (c TypedCodec[T]) marshal(v any, signature string, headed bool) ([]byte, error) {
	var p *T
	switch v := v.(type) {
	case T:
		p = &v
	case *T:
		p = v
	case nil: // a nil any, error or other interface result: no case T matches it
		if p = new(T); any(*p) != nil {
			return nil, fmt.Errorf("idem: codec of %T given nil", p)
		}
	default:
		return nil, fmt.Errorf("idem: codec of %T given a %T", p, v)
	}
	e := encoders.Get().(*Encoder)
	e.buf = e.buf[:0]
	if headed {
		e.buf = AppendHeader(e.buf, signature)
	}
	e.buf = append(e.buf, CodecMarker, CodecVersion)
	e.err, e.depth = nil, 0
	c.Encode(e, p)
	out, err := append([]byte(nil), e.buf...), e.err
	if cap(e.buf) <= maxPooledEncoder {
		e.err = nil
		encoders.Put(e)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// encoders pools TypedCodec.Marshal's encoders; one whose buffer grew
// past maxPooledEncoder (a large result) is left to the collector.
var encoders = sync.Pool{New: func() any { return &Encoder{buf: make([]byte, 0, 256)} }}

const maxPooledEncoder = 64 << 10

// Unmarshal decodes data into v, a *T.
func (c TypedCodec[T]) Unmarshal(data []byte, v any) error {
	p, ok := v.(*T)
	if !ok {
		return fmt.Errorf("idem: codec of %T asked to decode into a %T", p, v)
	}
	return DecodeRecord(data, func(d *Decoder) { c.Decode(d, p) })
}

// DecodeRecord checks data's marker and version and runs decode over the
// value it holds, which must use all of data.
func DecodeRecord(data []byte, decode func(d *Decoder)) error {
	switch {
	case len(data) < 2 || data[0] != CodecMarker:
		return fmt.Errorf("%w: not a generated codec's record", ErrCorruptRecord)
	case data[1] != CodecVersion:
		return fmt.Errorf("%w: record format version %d, this build reads %d", ErrCorruptRecord, data[1], CodecVersion)
	}
	d := Decoder{b: data, off: 2}
	decode(&d)
	if d.err == nil && d.off != len(data) {
		d.corrupt("bytes after the value")
	}
	return d.err
}
