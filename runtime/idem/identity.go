package idem

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/idemgen/idemgen/runtime/internal/impl"
)

// Function identity in records.
//
// Two functions that share a Spec.Name (and Version) share a key space: a
// call of one can find the other's record under its key. So that it never
// replays the other's result (or its recorded failure, or ErrDuplicate),
// every record the Guard writes starts with a header naming the function
// that wrote it (its Signature; impl.AppendHeader lays it out).
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
// hand-written idem.Do, or a signature that changed since), or another
// Spec of the process already has its name and version. It matches
// ErrResultIncompatible and fails closed the same way: the function does
// not run for that key, and no other function's result is returned. Give
// one of the functions its own name=, or bump version=.
var ErrFunctionMismatch = fmt.Errorf("%w: the record was written by another function", ErrResultIncompatible)

// appendHeader appends spec's identity header to b.
func appendHeader(b []byte, spec *Spec) []byte { return impl.AppendHeader(b, spec.Signature) }

// checkRecord returns the body of data, a record read for spec: data
// itself for a record without a header, ErrFunctionMismatch for one that
// another function wrote.
func checkRecord(spec *Spec, data []byte) ([]byte, error) {
	if body, ok := impl.OwnRecord(spec.Signature, data); ok {
		return body, nil // the replay's usual case, without parsing
	}
	h, body, ok, err := impl.SplitRecord(data)
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
	// sealed is the last record Marshal sealed under a Sealer.
	sealed atomic.Pointer[sealedRecord]
}

// Marshal encodes v behind the call's identity header, in its stored
// form (sealed, compressed). A record over the function's budget is an
// error wrapping ErrResultTooLarge. A store that completes the record itself
// (pgstore's CompleteInTx) calls it; the Guard's own completion then
// presents the same bytes for the same record (see result), where a new
// seal would draw a new nonce and no longer match what the store wrote.
func (c *recordCodec) Marshal(v any) ([]byte, error) {
	rec, err := c.encode(v)
	if err != nil {
		return nil, err
	}
	data, err := c.g.sealRecord(c.spec, c.key, rec)
	if err == nil && c.g.transform.Sealer != nil {
		c.sealed.Store(&sealedRecord{rec: rec, data: data})
	}
	return data, err
}

// result is the stored form of the call's result v for the Guard's
// completion: Marshal's, or the bytes a store sealed for this same record
// already.
func (c *recordCodec) result(v any) ([]byte, error) {
	rec, err := c.encode(v)
	if err != nil {
		return nil, err
	}
	if m := c.sealed.Load(); m != nil && bytes.Equal(m.rec, rec) {
		return m.data, nil
	}
	return c.g.sealRecord(c.spec, c.key, rec)
}

// sealedRecord is a record as encoded (rec) and as sealed (data).
type sealedRecord struct{ rec, data []byte }

// encode is v behind the call's identity header, within the function's
// budget.
func (c *recordCodec) encode(v any) ([]byte, error) {
	rec, err := c.record(v)
	if err != nil {
		return nil, err
	}
	// The budget counts the record before compression and sealing, as the
	// reader bounds its inflation (openRecord): what is accepted replays.
	if err := c.g.overBudget(c.spec, len(rec)); err != nil {
		return nil, err
	}
	return rec, nil
}

// record is v behind the call's identity header, whatever its size: a
// stream's items are budgeted together (stream.go).
func (c *recordCodec) record(v any) ([]byte, error) {
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
		rec = append(appendHeader(make([]byte, 0, impl.HeaderLen(c.spec.Signature)+len(data)), c.spec), data...)
	}
	return rec, nil
}

// Unmarshal decodes a record of the call's function into v (a *R).
func (c *recordCodec) Unmarshal(data []byte, v any) error {
	body, err := c.g.openRecord(c.spec, c.key, data)
	if err != nil {
		return err
	}
	return c.g.decodeRecord(c.spec, body, v)
}

// Function identity in the process. The signature leaves type and field
// names out, so that renaming a type keeps its records; two functions of
// one shape given one name= (Charge(ChargeReq) (Receipt, error) and
// MakeRefund(RefundReq) (Refund, error)) therefore have one signature, and
// records cannot tell them apart. In one process they are told apart by
// their Specs: idemgen writes one Spec per function, so a second Spec with
// a signature and the name and version of one already used is another
// function. Its calls fail with ErrFunctionMismatch before anything runs.
// Specs without a signature (hand-written) claim nothing and are not
// checked.

// specID is a Spec's key space in the process.
type specID struct {
	name    string
	version int
}

// specs holds, by name and version, the first Spec with a signature used
// in the process.
var specs sync.Map // specID → *Spec

// claimName checks spec against the Specs of the process, once per Spec
// when it passes.
func (s *Spec) claimName() error {
	if atomic.LoadPointer(&s.claimed) == unsafe.Pointer(s) {
		return nil
	}
	if s.Signature != "" {
		first, _ := specs.LoadOrStore(specID{s.Name, s.Version}, s)
		if f := first.(*Spec); f != s {
			return fmt.Errorf("%w: %s v%d is the name and version of another function in this process "+
				"(signatures %q and %q): give one of them its own name=", ErrFunctionMismatch, s.Name, s.Version, f.Signature, s.Signature)
		}
	}
	atomic.StorePointer(&s.claimed, unsafe.Pointer(s))
	return nil
}
