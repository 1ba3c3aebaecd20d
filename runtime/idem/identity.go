package idem

import (
	"fmt"

	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// Function identity in records.
//
// Two functions that share a Spec.Name (and Version) share a key space: a
// call of one can find the other's record under its key. So that it never
// replays the other's result (or its recorded failure, or ErrDuplicate),
// every record the Guard writes starts with a header naming the function
// that wrote it (idemimpl.AppendHeader).
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
// ErrFunctionMismatch: a stored record was written by another function
// that shares this one's name= and version= (another package, a
// hand-written idem.Do, or a signature that changed since). It matches
// ErrResultIncompatible and fails closed the same way: the function does
// not run for that key, and no other function's result is returned. Give
// one of the functions its own name=, or bump version=.
var ErrFunctionMismatch = fmt.Errorf("%w: the record was written by another function", ErrResultIncompatible)

// appendHeader appends spec's identity header to b.
func appendHeader(b []byte, spec *Spec) []byte { return idemimpl.AppendHeader(b, spec.Signature) }

// checkRecord returns the body of data, a record read for spec: data
// itself for a record without a header, ErrFunctionMismatch for one that
// another function wrote.
func checkRecord(spec *Spec, data []byte) ([]byte, error) {
	if body, ok := idemimpl.OwnRecord(spec.Signature, data); ok {
		return body, nil // the replay's usual case, without parsing
	}
	h, body, ok, err := idemimpl.SplitRecord(data)
	if !ok || err != nil {
		return body, err
	}
	if h.Signature != spec.Signature {
		return nil, fmt.Errorf("%w: written with signature %q, read by %s v%d with signature %q",
			ErrFunctionMismatch, h.Signature, spec.Name, spec.Version, spec.Signature)
	}
	return body, nil
}

// sameFunction reports whether a and b describe one function's records.
func sameFunction(a, b *Spec) bool {
	return a == b || a.Name == b.Name && a.Version == b.Version && a.Signature == b.Signature
}

// headedMarshaler is a codec that writes a record behind a header itself,
// sparing a copy of the encoded result (TypedCodec).
type headedMarshaler interface {
	MarshalRecord(signature string, v any) ([]byte, error)
}

// recordCodec is the codec of one guarded call's records: spec's codec
// (or the Guard's) behind spec's identity header. LeaseFrom hands it to
// stores that complete a record themselves, so they write the Guard's
// bytes exactly.
type recordCodec struct {
	g    *Guard
	spec *Spec
	key  string // the call's store key: sealed records are bound to it
}

// Marshal encodes v behind the call's identity header, then compresses
// and seals it as the Guard does. A record over the function's budget is
// an error wrapping ErrResultTooLarge.
func (c *recordCodec) Marshal(v any) ([]byte, error) {
	inner := c.g.codecOf(c.spec)
	var rec []byte
	if h, ok := inner.(headedMarshaler); ok {
		var err error
		if rec, err = h.MarshalRecord(c.spec.Signature, v); err != nil {
			return nil, err
		}
	} else {
		data, err := inner.Marshal(v)
		if err != nil {
			return nil, err
		}
		rec = append(appendHeader(make([]byte, 0, idemimpl.HeaderLen(c.spec.Signature)+len(data)), c.spec), data...)
	}
	// The budget counts the record before compression and sealing, as the
	// reader bounds its inflation (openRecord): what is accepted replays.
	if err := c.g.overBudget(c.spec, len(rec)); err != nil {
		return nil, err
	}
	return c.g.sealRecord(c.spec, c.key, rec)
}

// Unmarshal decodes a record of the call's function into v (a *R).
func (c *recordCodec) Unmarshal(data []byte, v any) error {
	body, err := c.g.openRecord(c.spec, c.key, data)
	if err != nil {
		return err
	}
	return c.g.decodeRecord(c.spec, body, v)
}
