package idem

import (
	"errors"
	"fmt"
	"time"

	"github.com/idemgen/idemgen/runtime/internal/impl"
)

// Errors returned by Do and by stores. Test them with errors.Is: the runtime
// wraps them with context (the function name, the underlying store error).
var (
	// ErrInProgress: another call with the same key is running and the
	// function's on_duplicate mode is return or raise (or a wait timed out).
	ErrInProgress = errors.New("idem: a call with this key is in progress")
	// ErrDuplicate: on_duplicate=raise and the key has already finished.
	ErrDuplicate = errors.New("idem: duplicate call")
	// ErrPayloadMismatch: the key was used before with a different payload.
	ErrPayloadMismatch = errors.New("idem: key reused with a different payload")
	// ErrInvalidKey: a caller-supplied ID is empty or longer than 255 bytes,
	// or a key value cannot be encoded (NaN, a failing marshaler), or the
	// store can never hold the key (longer than its key limit). Never
	// failed open (WithFailOpen).
	ErrInvalidKey = impl.ErrInvalidKey
	// ErrLeaseLost: the caller no longer owns the key (another caller took
	// over after the lease expired, or an operator released it). Stores
	// return it from every fenced write by a stale owner.
	ErrLeaseLost = errors.New("idem: lease lost")
	// ErrStoreUnavailable: the store could not be reached or refused the
	// operation; with the default fail-closed policy the function did not run.
	ErrStoreUnavailable = errors.New("idem: store unavailable")
	// ErrStoreFull: a bounded store is at capacity and cannot claim a new key.
	// Replays of stored keys are still served. Do wraps it in ErrStoreUnavailable.
	ErrStoreFull = errors.New("idem: store is full")
	// ErrResultTooLarge: the store cannot hold the encoded result. The
	// Guard records the call as failed (the function has run, so it must
	// not run again) and returns the function's result with this error.
	ErrResultTooLarge = errors.New("idem: result too large for the store")
	// ErrResultNotEncodable: the codec could not encode the function's
	// result (a NaN or ±Inf float under encoding/json, a MarshalJSON that
	// fails). Handled like ErrResultTooLarge: the function has run, so the
	// Guard records the call as failed instead of releasing the key, and
	// returns the function's result with this error.
	ErrResultNotEncodable = errors.New("idem: result cannot be encoded")
	// ErrNotFound: Store.Get or Store.Delete found no live record.
	ErrNotFound = errors.New("idem: record not found")
	// ErrOutOfOrder: an ordered function's event is older than the last
	// event accepted for its entity, beyond the grace window
	// (*OutOfOrderError carries both times).
	ErrOutOfOrder = errors.New("idem: event out of order")
	// ErrCorruptRecord: a store found a value at a record key that it cannot
	// decode. It is never treated as absent.
	ErrCorruptRecord = impl.ErrCorruptRecord
	// ErrResultIncompatible: a stored result was written for a result type
	// of another shape (a field's type changed since the record was
	// written). Like ErrCorruptRecord it fails closed: the function does
	// not run again for that key. Bump the function's version= to start a
	// fresh key space when a result type changes incompatibly; added and
	// removed fields need no bump.
	ErrResultIncompatible = impl.ErrResultIncompatible
)

// RecordedError is the error a duplicate receives when the first call failed
// under on_failure=lock: the first call's error message, replayed. Match it
// with errors.As(err, new(*idem.RecordedError)).
//
// The runtime records failures of its own too: a result the store could not
// hold or the codec could not encode. Such a RecordedError also matches
// ErrResultTooLarge or ErrResultNotEncodable under errors.Is, on the first
// call and on every replay.
type RecordedError struct {
	// Func is the function's stable name (Spec.Name).
	Func string
	// Message is the original error's Error() text.
	Message string
	// Cause is ErrResultTooLarge or ErrResultNotEncodable when the
	// failure is the runtime's own, else nil.
	Cause error
}

// Error names the function and the recorded message.
func (e *RecordedError) Error() string {
	return fmt.Sprintf("idem: %s failed earlier: %s", e.Func, e.Message)
}

// Unwrap returns Cause, so errors.Is sees the runtime's own failures.
func (e *RecordedError) Unwrap() error { return e.Cause }

// recordedCauses are the runtime's own failure causes and their names in a
// stored failure record: names, not messages, so a reworded message still
// decodes to the same sentinel.
var recordedCauses = []struct {
	code string
	err  error
}{
	{"result_too_large", ErrResultTooLarge},
	{"result_not_encodable", ErrResultNotEncodable},
}

func causeCode(err error) string {
	for _, c := range recordedCauses {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return ""
}

func causeOf(code string) error {
	for _, c := range recordedCauses {
		if c.code == code {
			return c.err
		}
	}
	return nil
}

// InProgressError carries what is known about the running owner. It matches
// ErrInProgress under errors.Is.
type InProgressError struct {
	Key        string
	LeaseUntil time.Time // the owner's lease expiry, by the store's clock
}

// Error is ErrInProgress's message.
func (e *InProgressError) Error() string { return ErrInProgress.Error() }

// Is reports whether target is ErrInProgress, so errors.Is matches the sentinel.
func (e *InProgressError) Is(target error) bool { return target == ErrInProgress }

// OutOfOrderError is returned for an event older than its entity's last
// accepted event (beyond the grace window). It matches ErrOutOfOrder.
type OutOfOrderError struct {
	Func         string
	LastAccepted time.Time
	Submitted    time.Time
	Grace        time.Duration
}

// Error names the function, the event's time, the last accepted time and the grace.
func (e *OutOfOrderError) Error() string {
	return fmt.Sprintf("idem: %s: event out of order: submitted %s, last accepted %s (grace %s)",
		e.Func, e.Submitted.Format(time.RFC3339Nano), e.LastAccepted.Format(time.RFC3339Nano), e.Grace)
}

// Is reports whether target is ErrOutOfOrder, so errors.Is matches the sentinel.
func (e *OutOfOrderError) Is(target error) bool { return target == ErrOutOfOrder }
