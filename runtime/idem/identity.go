package idem

import (
	"encoding/binary"
	"fmt"
)

// Function identity in records.
//
// Two functions that share a Spec.Name (and Version) share a key space: a
// call of one can find the other's record under its key. So that it never
// replays the other's result (or its recorded failure, or ErrDuplicate),
// every record the Guard writes starts with a header naming the function
// that wrote it:
//
//	0xb2 (RecordMarker), RecordVersion,
//	uvarint len, Spec.Signature,
//	then the record's body: the codec's bytes (a result) or the
//	recorded failure's JSON.
//
// The name and version are not repeated: they are in the store key the
// record lives under, so a record read for a Spec was written by a Spec
// of the same name and version, and only the signature can differ.
//
// A record whose header holds another signature is ErrFunctionMismatch
// (which matches ErrResultIncompatible): the call fails closed and the
// function does not run. A record without the header was written by a
// build from before records carried one; it is read as it always was,
// unchecked, since there is nothing to check it against.
//
// The header holds the Signature as given, not a hash of it: idemgen's
// signatures are short digests already, and comparing the stored bytes
// costs a replay no hashing and no allocation.
const (
	// RecordMarker is the first byte of a record that carries its
	// function's identity. No encoding/json document and no generated
	// codec's record (CodecMarker) starts with it.
	RecordMarker byte = 0xb2
	// RecordVersion is the header's layout version, the record's second
	// byte.
	RecordVersion byte = 2
)

// ErrFunctionMismatch: a stored record was written by another function
// that shares this one's name= and version= (another package, a
// hand-written idem.Do, or a signature that changed since). It matches
// ErrResultIncompatible and fails closed the same way: the function does
// not run for that key, and no other function's result is returned. Give
// one of the functions its own name=, or bump version=.
var ErrFunctionMismatch = fmt.Errorf("%w: the record was written by another function", ErrResultIncompatible)

// RecordHeader is the identity a record carries: the Signature of the
// Spec that wrote it (its name and version are in the record's key).
type RecordHeader struct {
	Signature string
}

// SplitRecord returns the identity header of a stored record (a completed
// result or a recorded failure) and the body that follows it. ok is false
// for a record written before records carried a header: body is then data
// itself. A header that does not parse is ErrCorruptRecord. Operator
// tools use it to show who wrote a record and to read a failure's JSON.
func SplitRecord(data []byte) (h RecordHeader, body []byte, ok bool, err error) {
	sig, body, ok, err := splitRecord(data)
	if !ok || err != nil {
		return RecordHeader{}, body, ok, err
	}
	return RecordHeader{Signature: string(sig)}, body, true, nil
}

// splitRecord is SplitRecord without copying the signature.
func splitRecord(data []byte) (sig, body []byte, ok bool, err error) {
	if len(data) == 0 || data[0] != RecordMarker {
		return nil, data, false, nil
	}
	corrupt := func(what string) error {
		return fmt.Errorf("%w: record header: %s", ErrCorruptRecord, what)
	}
	switch {
	case len(data) < 2:
		return nil, nil, true, corrupt("truncated")
	case data[1] != RecordVersion:
		return nil, nil, true, corrupt(fmt.Sprintf("layout version %d, this build reads %d", data[1], RecordVersion))
	}
	n, w := binary.Uvarint(data[2:])
	if w <= 0 || n > uint64(len(data)-2-w) {
		return nil, nil, true, corrupt("bad signature")
	}
	at := 2 + w
	return data[at : at+int(n)], data[at+int(n):], true, nil
}

// appendHeader appends spec's identity header to b.
func appendHeader(b []byte, spec *Spec) []byte {
	b = append(b, RecordMarker, RecordVersion)
	b = binary.AppendUvarint(b, uint64(len(spec.Signature)))
	return append(b, spec.Signature...)
}

// headerLen is the length of appendHeader's output for spec.
func headerLen(spec *Spec) int {
	n := len(spec.Signature)
	w := 1 // the length's uvarint bytes
	for v := n; v >= 0x80; v >>= 7 {
		w++
	}
	return 2 + w + n
}

// checkRecord returns the body of data, a record read for spec: data
// itself for a record without a header, ErrFunctionMismatch for one that
// another function wrote.
func checkRecord(spec *Spec, data []byte) ([]byte, error) {
	if body, ok := ownRecord(spec, data); ok {
		return body, nil // the replay's usual case, without parsing
	}
	sig, body, ok, err := splitRecord(data)
	if !ok || err != nil {
		return body, err
	}
	if string(sig) != spec.Signature {
		return nil, fmt.Errorf("%w: written with signature %q, read by %s v%d with signature %q",
			ErrFunctionMismatch, sig, spec.Name, spec.Version, spec.Signature)
	}
	return body, nil
}

// ownRecord returns the body of data when data starts with exactly the
// header spec writes, for a signature under 128 bytes (a one-byte
// length) in straight-line code; checkRecord parses any other.
func ownRecord(spec *Spec, data []byte) ([]byte, bool) {
	sig := spec.Signature
	n := 3 + len(sig)
	if len(sig) >= 0x80 || len(data) < n || data[0] != RecordMarker || data[1] != RecordVersion ||
		data[2] != byte(len(sig)) || string(data[3:n]) != sig {
		return nil, false
	}
	return data[n:], true
}

// sameFunction reports whether a and b describe one function's records.
func sameFunction(a, b *Spec) bool {
	return a == b || a.Name == b.Name && a.Version == b.Version && a.Signature == b.Signature
}

// headedMarshaler is a codec that writes a record behind a header itself,
// sparing a copy of the encoded result (TypedCodec).
type headedMarshaler interface {
	marshalFor(spec *Spec, v any) ([]byte, error)
}

// recordCodec is the codec of one guarded call's records: spec's codec
// (or the Guard's) behind spec's identity header. CodecFrom hands it to
// stores that complete a record themselves, so they write the Guard's
// bytes exactly.
type recordCodec struct {
	g    *Guard
	spec *Spec
}

// Marshal encodes v behind the call's identity header.
func (c *recordCodec) Marshal(v any) ([]byte, error) {
	inner := c.g.codecOf(c.spec)
	if h, ok := inner.(headedMarshaler); ok {
		return h.marshalFor(c.spec, v)
	}
	data, err := inner.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, headerLen(c.spec)+len(data))
	return append(appendHeader(out, c.spec), data...), nil
}

// Unmarshal decodes a record of the call's function into v (a *R).
func (c *recordCodec) Unmarshal(data []byte, v any) error {
	body, err := checkRecord(c.spec, data)
	if err != nil {
		return err
	}
	return c.g.decodeRecord(c.spec, body, v)
}
