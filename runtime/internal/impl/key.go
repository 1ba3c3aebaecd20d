package impl

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"math"
	"slices"
	"time"
)

// Keyer is idem.Keyer: types that name their own key, a value keyed as
// Any keys it.
type Keyer interface {
	IdemKey() any
}

// The canonical encoding. Every value starts with a tag byte naming its
// kind, and what follows the tag is self-delimiting: fixed-size (floats),
// a varint, or a length and then that many bytes or values. A pointer is
// its marker and then the pointee; nil is a marker of its own. So no
// value's bytes are a prefix of another value's bytes, in any position
// (top level, fields, elements, map entries, pointers, key= paths, inside
// a Keyer's brackets): a sequence of values can be read back from its
// bytes without knowing their types, and two sequences share bytes only
// if they hold the same values. The property test in test/keyprop checks
// this over random types and values.
const (
	tagFalse      = 'F'
	tagTrue       = 'T'
	tagInt        = 'i'
	tagUint       = 'u'
	tagFloat      = 'f'
	tagComplex    = 'c'
	tagString     = 's'
	tagBytes      = 'y'
	tagTime       = 't'
	tagNil        = 'n'
	tagPtr        = 'p'
	tagList       = 'l'
	tagMap        = 'm'
	tagOpen       = '('
	tagClose      = ')'
	tagAny        = 'a' // a value held in an empty interface: its type, then it
	maxKeyerDepth = 64
	flushAt       = 4096 // encoded bytes buffered before they are hashed
	maxMapDepth   = 64
)

// KeyBuilder accumulates the canonical encoding of a key and hashes it with
// SHA-256. Generated code writes into it field by field; Keyer
// implementations do the same. Builders are pooled by the Guard, so
// deriving a key does not allocate.
//
// Errors (a NaN, a failing marshaler, an invalid caller ID) are sticky: the
// first is reported when the call starts and the function does not run.
type KeyBuilder struct {
	buf     []byte
	h       hash.Hash // created on the first flush of a large key
	out     [32]byte
	flushed bool
	err     error
	keyers  int   // Keyer nesting (Open/Close)
	nest    depth // Enter/Leave: values of recursive types
	// Map encoding: entries are buffered, then sorted by their encoded
	// bytes so the result does not depend on map iteration order.
	maps    []mapFrame
	entries []int
	spans   []span
	scratch []byte
}

type span struct{ lo, hi int }

type mapFrame struct {
	start  int // offset in buf of the first entry
	first  int // index in entries of this map's first entry
	parent int // len(entries) before this map (restored at MapEnd)
}

// Reset empties b for reuse, keeping its buffers.
func (b *KeyBuilder) Reset() { b.reset() }

func (b *KeyBuilder) reset() {
	b.buf = b.buf[:0]
	b.flushed = false
	b.err = nil
	b.keyers = 0
	b.nest = 0
	b.maps = b.maps[:0]
	b.entries = b.entries[:0]
	if b.h != nil {
		b.h.Reset()
	}
}

// maybeFlush hashes what is buffered once it is large. The check is small
// enough to inline into every writer; flush does the rest.
func (b *KeyBuilder) maybeFlush() {
	if len(b.buf) >= flushAt {
		b.flush()
	}
}

func (b *KeyBuilder) flush() {
	if len(b.maps) > 0 {
		return // map entries are still to be sorted in place
	}
	if b.h == nil {
		b.h = sha256.New()
	}
	b.h.Write(b.buf)
	b.buf = b.buf[:0]
	b.flushed = true
}

// Sum returns the SHA-256 of the key material written since the last
// Reset.
func (b *KeyBuilder) Sum() [32]byte {
	if !b.flushed {
		return sha256.Sum256(b.buf)
	}
	b.h.Write(b.buf)
	// Sum into a field: a local array handed to an interface method
	// would escape and cost an allocation per key.
	b.h.Sum(b.out[:0])
	return b.out
}

// Material returns the key material written since the last Reset, and
// false once part of it was hashed already (a large key).
func (b *KeyBuilder) Material() ([]byte, bool) { return b.buf, !b.flushed }

// Err returns the first error recorded while building, if any.
func (b *KeyBuilder) Err() error { return b.err }

// Fail records err (wrapped in ErrInvalidKey) unless an error is already recorded.
func (b *KeyBuilder) Fail(err error) {
	if b.err == nil && err != nil {
		b.err = fmt.Errorf("%w: %w", ErrInvalidKey, err)
	}
}

// tag writes a value's type tag.
func (b *KeyBuilder) tag(t byte) { b.buf = append(b.buf, t) }

// Enter is called by the generated key writer of a recursive type before
// it writes a value, and Leave after: false means the value is not to be
// written (nested deeper than MaxDepth, a cyclic value, or an error is
// already recorded), and Leave is not due. A cycle is then ErrInvalidKey
// instead of a stack overflow.
func (b *KeyBuilder) Enter() bool { return b.nest.enter(&b.err, errKeyTooDeep) }

// errKeyTooDeep is what Fail would record for a key nested too deeply.
var errKeyTooDeep = fmt.Errorf("%w: %w", ErrInvalidKey, fmt.Errorf("key material nested deeper than %d levels (a cyclic value?)", MaxDepth))

// Leave ends what Enter began.
func (b *KeyBuilder) Leave() { b.nest-- }

// Bool writes a bool.
func (b *KeyBuilder) Bool(v bool) {
	if v {
		b.buf = append(b.buf, tagTrue)
	} else {
		b.buf = append(b.buf, tagFalse)
	}
}

// Int writes any signed integer (int, int8 … int64, time.Duration).
func (b *KeyBuilder) Int(v int64) {
	if u := uint64(v<<1) ^ uint64(v>>63); u < 0x80 {
		b.buf = append(b.buf, tagInt, byte(u)) // zigzag, as AppendVarint
		return
	}
	b.buf = binary.AppendVarint(append(b.buf, tagInt), v)
}

// Uint writes any unsigned integer (uint, uint8 … uint64, uintptr).
func (b *KeyBuilder) Uint(v uint64) {
	b.tag(tagUint)
	b.buf = binary.AppendUvarint(b.buf, v)
}

// Float writes a float32 or float64 canonically: -0 is written as 0 and
// NaN is rejected (NaN != NaN, so it cannot identify a call).
func (b *KeyBuilder) Float(v float64) {
	if math.IsNaN(v) {
		b.Fail(fmt.Errorf("NaN cannot be part of a key"))
		return
	}
	if v == 0 {
		v = 0 // folds -0 into +0
	}
	b.tag(tagFloat)
	b.buf = binary.BigEndian.AppendUint64(b.buf, math.Float64bits(v))
}

// Complex writes a complex64 or complex128 as two canonical floats.
func (b *KeyBuilder) Complex(v complex128) {
	b.tag(tagComplex)
	b.Float(real(v))
	b.Float(imag(v))
}

// String writes a string.
func (b *KeyBuilder) String(s string) {
	b.head(tagString, len(s))
	b.buf = append(b.buf, s...)
	b.maybeFlush()
}

// head writes a tag and a length as the tag byte and then
// binary.AppendUvarint would, with the one-byte length (nearly every key
// string) in a single append, short enough to inline.
func (b *KeyBuilder) head(tag byte, n int) {
	if n < 0x80 {
		b.buf = append(b.buf, tag, byte(n))
		return
	}
	b.buf = binary.AppendUvarint(append(b.buf, tag), uint64(n))
}

// Bytes writes a non-nil byte slice (write Nil for a nil one).
func (b *KeyBuilder) Bytes(p []byte) {
	b.buf = append(b.buf, tagBytes) // marks non-nil: a nil slice writes Nil
	b.buf = binary.AppendUvarint(b.buf, uint64(len(p)))
	b.buf = append(b.buf, p...)
	b.maybeFlush()
}

// Marshaled writes the output of a MarshalBinary or MarshalText call,
// recording its error.
func (b *KeyBuilder) Marshaled(p []byte, err error) {
	if err != nil {
		b.Fail(err)
		return
	}
	b.Bytes(p)
}

// Time writes the instant of t: its zone and monotonic reading are ignored,
// so the same instant in two zones is the same key.
func (b *KeyBuilder) Time(t time.Time) {
	b.tag(tagTime)
	b.buf = binary.AppendVarint(b.buf, t.Unix())
	b.buf = binary.AppendUvarint(b.buf, uint64(t.Nanosecond()))
	b.maybeFlush()
}

// Nil writes the marker of a nil pointer, slice or map. It differs from
// every non-nil value, including an empty slice or map.
func (b *KeyBuilder) Nil() { b.buf = append(b.buf, tagNil) }

// Ptr writes the marker of a non-nil pointer; write the pointee next.
func (b *KeyBuilder) Ptr() { b.buf = append(b.buf, tagPtr) }

// List starts a slice or array of n elements; write the n elements next.
func (b *KeyBuilder) List(n int) { b.head(tagList, n) }

// Open and Close bracket what a Keyer writes, so a Keyer that writes a
// variable number of values cannot run into the next field.
// Values written between them carry type tags.
func (b *KeyBuilder) Open() {
	b.buf = append(b.buf, tagOpen)
	if b.keyers++; b.keyers > maxKeyerDepth {
		b.Fail(fmt.Errorf("keyers nested deeper than %d (a cycle?)", maxKeyerDepth))
	}
}

// Close ends what Open started.
func (b *KeyBuilder) Close() {
	b.buf = append(b.buf, tagClose)
	if b.keyers > 0 {
		b.keyers--
	}
}

// Key writes a value that implements Keyer: the value its IdemKey
// returns, written by Any and bracketed by Open and Close. A Keyer that
// reaches itself (an IdemKey that returns a Keyer, cyclically) stops at
// maxKeyerDepth with ErrInvalidKey instead of recursing until the stack
// overflows.
func (b *KeyBuilder) Key(k Keyer) {
	b.Open()
	if b.err == nil {
		b.Any(k.IdemKey())
	}
	b.Close()
}

// ID writes a caller-supplied ID (a key= naming a single string): an empty
// ID or one longer than MaxIDLen bytes is ErrInvalidKey.
func (b *KeyBuilder) ID(s string) {
	if s == "" {
		b.Fail(fmt.Errorf("empty ID"))
		return
	}
	if len(s) > MaxIDLen {
		b.Fail(fmt.Errorf("ID of %d bytes is longer than %d", len(s), MaxIDLen))
		return
	}
	b.String(s)
}

// MapStart starts a map of n entries. For each entry call MapEntry, then
// write the entry's key and value; finish with MapEnd. Entries are sorted
// by their encoding, so iteration order does not matter.
func (b *KeyBuilder) MapStart(n int) {
	b.head(tagMap, n)
	if len(b.maps) >= maxMapDepth {
		b.Fail(fmt.Errorf("maps nested deeper than %d", maxMapDepth))
	}
	b.maps = append(b.maps, mapFrame{start: len(b.buf), first: len(b.entries), parent: len(b.entries)})
}

// MapEntry marks the start of the next entry.
func (b *KeyBuilder) MapEntry() { b.entries = append(b.entries, len(b.buf)) }

// MapEnd sorts the entries written since the matching MapStart.
func (b *KeyBuilder) MapEnd() {
	if len(b.maps) == 0 {
		b.Fail(fmt.Errorf("MapEnd without MapStart"))
		return
	}
	f := b.maps[len(b.maps)-1]
	b.maps = b.maps[:len(b.maps)-1]
	offs := b.entries[f.first:]
	if len(offs) > 1 {
		end := len(b.buf)
		b.spans = b.spans[:0]
		for i, lo := range offs {
			hi := end
			if i+1 < len(offs) {
				hi = offs[i+1]
			}
			b.spans = append(b.spans, span{lo, hi})
		}
		buf := b.buf
		slices.SortFunc(b.spans, func(x, y span) int { return bytes.Compare(buf[x.lo:x.hi], buf[y.lo:y.hi]) })
		b.scratch = b.scratch[:0]
		for _, s := range b.spans {
			b.scratch = append(b.scratch, buf[s.lo:s.hi]...)
		}
		copy(buf[offs[0]:], b.scratch)
	}
	b.entries = b.entries[:f.parent]
	b.maybeFlush()
}
