package idemstore

import (
	"bytes"
	"context"
	"fmt"
	"time"
)

// Streamer is implemented by stores that record streamed results item by
// item (idem.Stream): the producer appends each item under its lease
// before any reader sees it, and readers (duplicates attached while it
// runs, or replaying after it finished) read the items from any offset.
//
// A stream belongs to one run: the ownership of one fence. A claim that
// acquires or takes over a record (absent, past its retention, released,
// or an expired lease) starts a new run, and the store drops the items of
// the run before, so the stream starts again at item 0 under the new
// fence; a reader tells runs apart by StreamBatch.Fence, never by the
// items alone. Items are kept while their record is retained, as its
// result is: they expire with it, and Delete removes them. A store may
// drop a released record's items at Release (the next claim would).
// Items count towards what the store holds for the record: an append past
// the store's limit returns an error wrapping ErrResultTooLarge and writes
// nothing (a store whose limit covers the result and the items together,
// as the memory store's does, refuses a Complete or Fail whose result no
// longer fits the same way).
//
// A store keeps the data it is given and returns it as it is: the caller
// does not modify an item after appending it, and readers treat the items
// a batch returns as read-only.
type Streamer interface {
	// AppendItem records data as item seq (0-based) of the stream of the
	// call l owns: a compare-and-set on owner and fence and the record
	// being in progress, like Complete, so a stale owner gets
	// ErrLeaseLost and writes nothing. seq must be the number of items
	// the run has recorded (the next one); an append that repeats item seq
	// with identical data (a request re-sent after its reply was lost) is
	// nil and writes nothing, and any other seq is an error that writes
	// nothing. Appending does not renew the lease.
	AppendItem(ctx context.Context, l Lease, seq uint64, data []byte) error
	// ReadStream returns the items of req.Key's stream from item
	// req.From on, with the state of its record. With req.Wait, when
	// there is nothing new to report — no item at req.From, the record in
	// progress under req.Fence (or any fence, for 0) with a live lease —
	// it blocks until there is: an append, a change of state or fence
	// (completion, failure, release, takeover, deletion), or the lease
	// running out by the store's clock; or until ctx is done, returning an
	// error that wraps ctx.Err(). Stores wake readers by notification
	// where they can, with bounded polling as a fallback (as Store.Wait
	// does), and may return a batch with nothing new after a poll: the
	// reader reads again. A key with no live record is a batch with
	// StateAbsent, not an error.
	ReadStream(ctx context.Context, req StreamRead) (StreamBatch, error)
}

// StreamRead asks Streamer.ReadStream for items of one stream.
type StreamRead struct {
	Key string
	// From is the sequence number of the first item wanted.
	From uint64
	// Max bounds how many items one batch returns (0: the store's
	// choice). A store may return fewer; it returns at least one when
	// the run has an item at From.
	Max int
	// Wait blocks while there is nothing new (see ReadStream).
	Wait bool
	// Fence is the run the reader follows: with Wait, a record under any
	// other fence is reported at once. 0: whichever run the record has.
	Fence uint64
}

// StreamBatch is what Streamer.ReadStream found: consecutive items of
// one run, and the state of the record that run belongs to, read
// together atomically.
type StreamBatch struct {
	// State is the record's (StateAbsent: no live record).
	State State
	// Fence is the record's fence: the run the items belong to.
	Fence uint64
	// LeaseExpired: the record is in progress but its owner's lease has
	// run out by the store's clock (its producer may have died; the next
	// claim takes over and restarts the stream).
	LeaseExpired bool
	// LeaseUntil is the lease expiry of an in-progress record.
	LeaseUntil time.Time
	// Count is how many items the run has recorded.
	Count uint64
	// Items are the run's items from StreamRead.From on (at most Max).
	Items [][]byte
	// Result is the record's result for StateCompleted and StateFailed:
	// the stream's end.
	Result []byte
}

// NewStreamBatch is the batch of a live record read at now, before its
// items: its state and fence, the lease of an in-progress record (and
// whether it ran out by now), the result of a finished one. The store's
// ReadStream sets Count and Items.
func NewStreamBatch(state State, fence uint64, leaseUntil, now time.Time, result []byte) StreamBatch {
	b := StreamBatch{State: state, Fence: fence}
	switch state {
	case StateInProgress:
		b.LeaseUntil = leaseUntil
		b.LeaseExpired = !now.Before(leaseUntil)
	case StateCompleted, StateFailed:
		b.Result = result
	}
	return b
}

// Idle reports whether b has nothing new for req, so that ReadStream
// blocks on it: req waits, there is no item at req.From, and the record
// is in progress under the fence req follows with a live lease.
func (req StreamRead) Idle(b StreamBatch) bool {
	return req.Wait && req.From >= b.Count && b.State == StateInProgress && !b.LeaseExpired &&
		(req.Fence == 0 || req.Fence == b.Fence)
}

// ItemOutOfPlace is the error of an append of item seq to a run of n
// items that is not the next (seq != n) nor a re-send of identical data:
// item seq is recorded with other data, or items before it are missing.
func ItemOutOfPlace(seq, n uint64) error {
	if seq < n {
		return fmt.Errorf("item %d is already recorded with other data", seq)
	}
	return fmt.Errorf("item %d appended after %d items: items are appended in order", seq, n)
}

// CheckAppend judges an append of data as item seq of a run whose items
// are items: the next item (false, nil), a re-send of a recorded item
// with identical data (true, nil: the store writes nothing), or out of
// place (ItemOutOfPlace).
func CheckAppend(items [][]byte, seq uint64, data []byte) (resent bool, err error) {
	n := uint64(len(items))
	switch {
	case seq == n:
		return false, nil
	case seq < n && bytes.Equal(items[seq], data):
		return true, nil
	}
	return false, ItemOutOfPlace(seq, n)
}
