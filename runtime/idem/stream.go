package idem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/impl"
)

// Streamed results: the first caller's function produces items, each
// recorded in the store (idemstore.Streamer) before anyone sees it, and
// every duplicate reads the recorded items, live while the producer runs
// or replayed after it finished. The producer is in produce.go.

// ErrStreamRestarted is wrapped by the error a stream's reader gets when
// the run it was reading ended without finishing (its producer died, lost
// its lease, or failed under on_failure=unlock) or was replaced by a new
// run after the reader had some of its items: the next run starts again
// from item 0 under a new fence, and splicing its items onto the old
// run's would be a stream nobody produced. The reader discards what it
// got and ranges the stream again (its StreamCursor, if any, is reset to
// the start).
var ErrStreamRestarted = errors.New("idem: stream restarted")

// StreamCursor is a position in a recorded stream. Hand one to a stream
// with StreamFrom: the stream starts at item Next, and before each item
// is yielded the cursor is moved past it, so after an item Next-1 is that
// item's sequence number (0-based) and Run the run it belongs to (the
// fence of the call that produced it). Keep it to resume a dropped
// stream where it stopped; a server can send both numbers to its client
// (an SSE event ID) and rebuild the cursor from them on a retry.
//
// A cursor belongs to one ranging at a time.
type StreamCursor struct {
	// Run is the run the items so far came from; 0: none yet, any run.
	// A stream whose run is another is ErrStreamRestarted.
	Run uint64
	// Next is the sequence number of the next item wanted.
	Next uint64
}

type cursorKey struct{}

// StreamFrom returns a ctx under which a stream (Stream, or a generated
// wrapper of a function returning a stream) starts at cur.Next and moves
// cur past each item it yields; see StreamCursor.
func StreamFrom(ctx context.Context, cur *StreamCursor) context.Context {
	return context.WithValue(ctx, cursorKey{}, cur)
}

func cursorFrom(ctx context.Context) *StreamCursor {
	c, _ := ctx.Value(cursorKey{}).(*StreamCursor)
	return c
}

// noCursor hides a caller's cursor from the producer's function, whose
// own streams are not the caller's.
type noCursor struct{ context.Context }

func (c noCursor) Value(key any) any {
	if key == (cursorKey{}) {
		return nil
	}
	return c.Context.Value(key)
}

// Stream runs fn at most once for the key written into c, as Do does,
// for a function whose result is a stream: fn yields items, and Stream
// returns them to every caller of the key, the first and the duplicates,
// in the same order. Ranging the returned sequence claims the key:
//
//   - The first caller's fn runs as the producer. Every item is encoded
//     by the Guard's codec (Spec.Codec if set), sealed and compressed as
//     results are, and appended to the store before it is yielded to
//     anyone. When fn returns nil the stream is completed (its end
//     records the item count); an error ends it as a failure does under
//     the Spec's on_failure (lock: recorded and replayed to every reader
//     after the same items; unlock: the key is released).
//   - A duplicate while the producer runs reads every recorded item from
//     the first, then the live ones as they are recorded, then the same
//     end. A duplicate after it finished replays the recorded items and
//     the end. on_duplicate=return attaches as wait does (a stream has
//     nothing to wait for: its items come as they are recorded); raise
//     gets ErrInProgress or ErrDuplicate.
//   - fn runs in a goroutine of its own, under a ctx that keeps the
//     caller's values but not its cancelation or deadline: when the
//     caller stops ranging or its ctx ends, fn goes on and the stream is
//     recorded to its end for whoever resumes it or attaches. It is
//     bounded: once the caller has left, fn's ctx is canceled if it
//     records no item for a whole lease (the key is then released), and
//     its ctx is canceled with cause ErrLeaseLost when its lease is lost,
//     as in Do. fn must stop when yield returns false.
//   - A run that ends without finishing (its process died, it lost its
//     lease) is restarted by the next claim from item 0 under a new
//     fence; a reader that had items of it gets ErrStreamRestarted, never
//     the new run's items after the old run's.
//
// A caller resumes from an item with StreamFrom. Errors end the sequence
// (they are yielded once, with T's zero value): the ones Do returns, and
// ErrStreamRestarted. A panic in fn releases the key and is re-panicked in
// the ranging caller's goroutine; after the caller has left it is
// reported to the Observer (OutcomeFailed) only. The store must implement
// idemstore.Streamer.
func Stream[T any](ctx context.Context, c Call, fn func(ctx context.Context, yield func(T) bool) error) iter.Seq2[T, error] {
	if ctx == nil {
		ctx = context.Background()
	}
	var st state
	err := c.finish(&st) // sets st.g and st.spec unless c was finished
	st.release()
	g, spec := st.g, st.spec
	return func(yield func(T, error) bool) {
		var zero T
		if g == nil {
			yield(zero, err)
			return
		}
		if err != nil {
			g.observe(ctx, Event{Func: spec.Name, Outcome: OutcomeInvalidKey, Err: err, Final: true})
			yield(zero, fmt.Errorf("%s: %w", spec.Name, err))
			return
		}
		s := state{ctx: ctx, g: g, spec: spec, key: st.key, fp: st.fp, order: st.order}
		if g.obs != nil {
			s.start = g.now()
		}
		defer s.end()
		r := &reader[T]{yield: yield, cur: cursorFrom(ctx)}
		if r.cur != nil {
			r.next, r.run = r.cur.Next, r.cur.Run
		}
		if err := streamRun(ctx, &s, r, fn); err != nil {
			r.fail(err)
		}
	}
}

// streamRun is Stream's ranging past the key: claim, then produce or
// read; a reader whose run ended before it got any of its items claims
// again.
func streamRun[T any](ctx context.Context, st *state, r *reader[T], fn func(context.Context, func(T) bool) error) error {
	g, spec := st.g, st.spec
	streamer, ok := g.store.(idemstore.Streamer)
	if !ok {
		return fmt.Errorf("idem: %s returns a stream, and the store %T keeps no streams (idemstore.Streamer)", spec.Name, g.store)
	}
	var overrideReason string
	if spec.Ordered {
		if err := orderable(st); err != nil {
			return err
		}
		overrideReason, st.order.Override = overrideFrom(ctx)
	}
	for {
		owner := st.nextOwner()
		var res idemstore.ClaimResult
		if err := claim(ctx, st, owner, &res); err != nil {
			if errors.Is(err, errFailOpen) {
				return unguarded(ctx, r, fn)
			}
			return err
		}
		st.repeat = !owns(res.Status)
		raise := spec.OnDuplicate == DuplicateRaise
		switch res.Status {
		case idemstore.ClaimAcquired, idemstore.ClaimTakenOver:
			return produce(ctx, st, &res, owner, overrideReason, r, fn)
		case idemstore.ClaimInProgress:
			if raise {
				return st.inProgress(res.LeaseUntil, res.Fence)
			}
		case idemstore.ClaimCompleted:
			if raise {
				_, err := replay[struct{}](st, &res)
				return err
			}
		case idemstore.ClaimFailed:
			if raise {
				return replayFailure(st, &res)
			}
		default:
			return refused(st, &res)
		}
		if again, err := follow(ctx, st, streamer, r, res.Fence); !again {
			return err
		}
	}
}

// reader is one ranging of a stream: what it has yielded so far.
type reader[T any] struct {
	yield func(T, error) bool
	cur   *StreamCursor // the caller's, or nil
	next  uint64        // the next item wanted
	run   uint64        // the run of the items yielded (or the cursor's); 0: none
	done  bool          // yield returned false, or an error was yielded
}

// item yields item seq of run; false when the caller stopped ranging.
func (r *reader[T]) item(seq, run uint64, v T) bool {
	r.run, r.next = run, seq+1
	if r.cur != nil {
		r.cur.Run, r.cur.Next = run, seq+1
	}
	if !r.yield(v, nil) {
		r.done = true
	}
	return !r.done
}

// fail ends the ranging with err, unless the caller stopped it already.
func (r *reader[T]) fail(err error) {
	if !r.done {
		r.done = true
		var zero T
		r.yield(zero, err)
	}
}

// restarted is the error of a reader whose run (r.run) ended or was
// replaced (why); it resets the caller's cursor to the start.
func (r *reader[T]) restarted(spec *Spec, why string) error {
	err := fmt.Errorf("%s: %w: %s; %d items of the run under fence %d were read: range the stream again, from item 0",
		spec.Name, ErrStreamRestarted, why, r.next, r.run)
	if r.cur != nil {
		*r.cur = StreamCursor{}
	}
	return err
}

// follow reads the recorded stream of the run under fence as a
// duplicate: the items from r.next on, live while the run goes on, then
// its end. again: the run ended, or was replaced, before this reader got
// any of its items, so claiming again (to produce, or to read the next
// run) splices nothing.
func follow[T any](ctx context.Context, st *state, s idemstore.Streamer, r *reader[T], fence uint64) (again bool, err error) {
	g, spec := st.g, st.spec
	if r.run != 0 && r.run != fence {
		err := r.restarted(spec, "the stream's current run is the one under fence "+strconv.FormatUint(fence, 10))
		st.ev(OutcomeLeaseLost, fence, err)
		return false, err
	}
	for {
		b, err := s.ReadStream(ctx, idemstore.StreamRead{Key: st.key, From: r.next, Wait: true, Fence: fence})
		if err != nil {
			return false, readFailed(ctx, st, fence, err)
		}
		if why := runEnded(&b, fence); why != "" {
			if r.run == 0 {
				return true, nil
			}
			err := r.restarted(spec, why)
			st.ev(OutcomeLeaseLost, fence, err)
			return false, err
		}
		for _, data := range b.Items {
			v, err := decodeItem[T](g, spec, st.key, fence, r.next, data)
			if err != nil {
				st.ev(OutcomeStoreError, fence, err)
				return false, err
			}
			if !r.item(r.next, fence, v) {
				st.ev(OutcomeReplayed, fence, nil)
				return false, nil
			}
		}
		if r.next < b.Count || b.State == idemstore.StateInProgress {
			continue
		}
		return false, streamEnded(st, &b)
	}
}

// runEnded says why the run under fence is over without an end a reader
// can replay ("" while it is not): its record is gone, released, taken
// over, or its lease ran out.
func runEnded(b *idemstore.StreamBatch, fence uint64) string {
	switch {
	case b.State == idemstore.StateAbsent:
		return "its record was deleted or expired"
	case b.Fence != fence:
		return "it was replaced by the run under fence " + strconv.FormatUint(b.Fence, 10)
	case b.State == idemstore.StateReleased:
		return "it ended without a result (an error under on_failure=unlock, a panic, or an operator's release)"
	case b.LeaseExpired:
		return "its producer's lease ran out (the producer died or was cut off)"
	}
	return ""
}

// readFailed is the error of a stream read the store did not answer.
func readFailed(ctx context.Context, st *state, fence uint64, err error) error {
	spec := st.spec
	if cerr := impl.CtxErr(ctx, err); cerr != nil {
		if cause := context.Cause(ctx); cause != nil {
			return fmt.Errorf("%s: %w", spec.Name, cause)
		}
		return fmt.Errorf("%s: %w (%v)", spec.Name, cerr, err)
	}
	st.ev(OutcomeStoreError, fence, err)
	return unavailable(spec.Name+": reading the stream: ", err)
}

// streamEnded is what a reader that has every item of a finished run
// gets last: nil for a completed stream whose end matches the items, the
// recorded failure for a failed one.
func streamEnded(st *state, b *idemstore.StreamBatch) error {
	g, spec := st.g, st.spec
	if b.State == idemstore.StateFailed {
		rerr := decodeFailure(g, spec, st.key, idemstore.Result{Data: b.Result})
		if _, ok := rerr.(*RecordedError); !ok {
			st.ev(OutcomeStoreError, b.Fence, rerr)
			return rerr
		}
		st.ev(OutcomeReplayed, b.Fence, rerr)
		return rerr
	}
	n, err := g.streamEndOf(spec, st.key, b.Result)
	if err == nil && n != b.Count {
		err = fmt.Errorf("idem: %s: %w: the stream's end says %d items, its record holds %d", spec.Name, ErrCorruptRecord, n, b.Count)
	}
	if err != nil {
		st.ev(OutcomeStoreError, b.Fence, err)
		return err
	}
	st.ev(OutcomeReplayed, b.Fence, nil)
	return nil
}

// unguarded runs fn without the store, for a Guard that fails open.
func unguarded[T any](ctx context.Context, r *reader[T], fn func(context.Context, func(T) bool) error) error {
	var seq uint64
	return fn(ctx, func(v T) bool {
		if r.done {
			return false
		}
		seq++
		return seq <= r.next || r.item(seq-1, 0, v)
	})
}

// itemKey is what item seq of the run under fence of key's stream is
// sealed for: its position is bound to it, so a store's reader can
// neither reorder items nor splice two runs. Only a sealed item needs it.
func (g *Guard) itemKey(key string, fence, seq uint64) string {
	if g.transform.Sealer == nil {
		return key
	}
	b := append([]byte(key), "#item:"...)
	b = strconv.AppendUint(b, fence, 10)
	b = append(b, '.')
	return string(strconv.AppendUint(b, seq, 10))
}

// decodeItem decodes item seq of the run under fence.
func decodeItem[T any](g *Guard, spec *Spec, key string, fence, seq uint64, data []byte) (T, error) {
	var v T
	body, err := g.openRecord(spec, g.itemKey(key, fence, seq), data)
	if err == nil {
		err = g.decodeRecord(spec, body, &v)
	}
	if err != nil {
		err = fmt.Errorf("idem: %s: stream item %d: %w: %w", spec.Name, seq, ErrCorruptRecord, err)
	}
	return v, err
}

// streamEnd is a completed stream's result: how many items it has, so a
// reader knows it has them all.
type streamEnd struct {
	Items *uint64 `json:"stream_items"`
}

// streamEndRecord is the stored form of the end of key's stream of n
// items.
func (g *Guard) streamEndRecord(spec *Spec, key string, n uint64) ([]byte, error) {
	body, _ := json.Marshal(streamEnd{Items: &n})
	rec := append(appendHeader(make([]byte, 0, impl.HeaderLen(spec.Signature)+len(body)), spec), body...)
	return g.sealRecord(spec, key, rec)
}

// streamEndOf is the item count a stream's end (data) records.
func (g *Guard) streamEndOf(spec *Spec, key string, data []byte) (uint64, error) {
	body, err := g.openRecord(spec, key, data)
	if err != nil {
		return 0, fmt.Errorf("idem: %s: the stream's end: %w", spec.Name, err)
	}
	var end streamEnd
	if err := json.Unmarshal(body, &end); err != nil || end.Items == nil {
		return 0, fmt.Errorf("idem: %s: %w: the record is not the end of a stream", spec.Name, ErrCorruptRecord)
	}
	return *end.Items, nil
}
