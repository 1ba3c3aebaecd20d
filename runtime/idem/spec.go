package idem

import (
	"time"
	"unsafe"
)

// OnDuplicate says what a duplicate call gets.
type OnDuplicate uint8

const (
	// DuplicateReturn replays a finished call's result; a duplicate of a
	// running call gets ErrInProgress. The default.
	DuplicateReturn OnDuplicate = iota
	// DuplicateRaise returns ErrDuplicate for a finished call and
	// ErrInProgress for a running one.
	DuplicateRaise
	// DuplicateWait replays a finished call's result and blocks on a running
	// one (bounded by ctx and Spec.Wait) until it finishes, then replays.
	DuplicateWait
)

// OnFailure says what happens to the key when the function returns an error.
type OnFailure uint8

const (
	// FailureUnlock releases the key so a retry runs the function again. The default.
	FailureUnlock OnFailure = iota
	// FailureLock records the error and replays it to duplicates as a *RecordedError.
	FailureLock
)

// Defaults for a Spec's zero fields.
const (
	defaultTTL   = 24 * time.Hour
	defaultLease = 30 * time.Second
)

// Spec is one guarded function's configuration, written by idemgen from the
// //idem: directive. A Spec is read-only once in use.
type Spec struct {
	// Name is the function's stable identity in keys (importpath.Func or
	// importpath.Type.Method unless name= is given).
	Name string
	// Version separates key spaces: bump it to start afresh.
	Version int
	// Signature identifies the function's shape: idemgen writes a digest
	// of its name=, version= and the skeleton of its parameter and result
	// types (kinds, not field sets or type names, so added fields and
	// renamed types keep it). Every record carries Name, Version and
	// Signature, and a record whose three differ from the reader's is
	// ErrFunctionMismatch, never a replay. Two functions of one shape
	// have one signature, so in one process a second Spec with a
	// signature that takes a name and version already in use fails every
	// call with ErrFunctionMismatch; across processes they are told apart
	// by their names only (docs/SECURITY.md). Hand-written Specs may
	// leave it empty; they are not checked in process.
	Signature string
	// TTL is how long a finished record is kept and replayed (default 24h).
	TTL time.Duration
	// Lease is the in-progress lease (default 30s), heartbeated every Lease/3.
	Lease time.Duration
	// Wait bounds how long a DuplicateWait caller blocks (default Lease).
	Wait        time.Duration
	OnDuplicate OnDuplicate
	OnFailure   OnFailure
	// Ordered: calls write an entity (Call.Entity) and a time (Call.At),
	// and an event older than the entity's last accepted one by more than
	// Grace gets ErrOutOfOrder (order= and grace= in the directive).
	Ordered bool
	Grace   time.Duration
	// MaxResult is the largest record, in bytes, a result or a step may
	// take as encoded, identity header included, before compression and
	// sealing (max_result= in the directive; 0: the Guard's
	// WithMaxResult, if any). A result over it is recorded as failed with
	// ErrResultTooLarge and never run again; a step over it is not
	// recorded (Step returns ErrResultTooLarge).
	MaxResult int
	// Codec, if set, encodes this function's results in place of the
	// Guard's codec (idemgen sets it to the result type's generated
	// TypedCodec). Its records start with CodecMarker (behind the
	// identity header); a stored record without it was written by the
	// Guard's codec (an older build) and is decoded by that. See
	// resultcodec.go.
	Codec Codec

	// claimed is the Spec itself once it has claimed its name and
	// version in the process (claimName): a copy of a Spec claims anew.
	claimed unsafe.Pointer
}

func (s *Spec) ttl() time.Duration {
	if s.TTL > 0 {
		return s.TTL
	}
	return defaultTTL
}

func (s *Spec) lease() time.Duration {
	if s.Lease > 0 {
		return s.Lease
	}
	return defaultLease
}

func (s *Spec) wait() time.Duration {
	if s.Wait > 0 {
		return s.Wait
	}
	return s.lease()
}
