package idemtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// streamCases check streamed results (idemstore.Streamer): run for
// stores that implement it.
var streamCases = []suiteCase{
	{"StreamAppendAndRead", testStreamAppendRead},
	{"StreamAppendsInOrder", testStreamInOrder},
	{"StreamStaleOwnerCannotAppend", testStreamStale},
	{"StreamReleaseAndTakeoverStartANewRun", testStreamNewRun},
	{"StreamBlockingReadWakes", testStreamWakes},
	{"StreamBlockingReadOfAnotherRunReturns", testStreamOtherRun},
	{"StreamItemsGoWithTheirRecord", testStreamExpire},
	{"StreamCanceledChangesNothing", testStreamCanceled},
	{"StreamThroughAGuard", testStreamGuard},
	{"StreamSealedItemsHoldNoPlaintext", testStreamSealed},
}

func (e *env) streamer() idemstore.Streamer { return e.s.(idemstore.Streamer) }

// appendItems appends items to l's stream from item from on.
func (e *env) appendItems(l idemstore.Lease, from uint64, items ...string) {
	e.t.Helper()
	for i, it := range items {
		if err := e.streamer().AppendItem(ctx, l, from+uint64(i), []byte(it)); err != nil {
			e.t.Fatalf("AppendItem(%d): %v", from+uint64(i), err)
		}
	}
}

// batch is a StreamBatch as the cases compare it.
type batch struct {
	State        idemstore.State
	Fence        uint64
	LeaseExpired bool
	Count        uint64
	Items        []string
	Result       string
}

func asBatch(b idemstore.StreamBatch) batch {
	out := batch{State: b.State, Fence: b.Fence, LeaseExpired: b.LeaseExpired, Count: b.Count, Result: string(b.Result)}
	for _, it := range b.Items {
		out.Items = append(out.Items, string(it))
	}
	return out
}

// read reads key's stream from item from on without waiting.
func (e *env) read(key string, from uint64, max int) batch {
	e.t.Helper()
	b, err := e.streamer().ReadStream(ctx, idemstore.StreamRead{Key: key, From: from, Max: max})
	if err != nil {
		e.t.Fatalf("ReadStream(%s, from %d): %v", key, from, err)
	}
	return asBatch(b)
}

func (e *env) wantBatch(what string, got, want batch) {
	e.t.Helper()
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		e.t.Fatalf("%s (-want +got):\n%s", what, diff)
	}
}

func testStreamAppendRead(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	e.wantBatch("a claimed key's stream", e.read(e.key, 0, 0), batch{State: idemstore.StateInProgress, Fence: l.Fence})
	e.appendItems(l, 0, "a", "b", "", "d")
	running := batch{State: idemstore.StateInProgress, Fence: l.Fence, Count: 4}
	for _, c := range []struct {
		from  uint64
		max   int
		items []string
	}{
		{0, 0, []string{"a", "b", "", "d"}},
		{1, 2, []string{"b", ""}},
		{3, 10, []string{"d"}},
		{4, 0, nil},
		{9, 0, nil},
	} {
		want := running
		want.Items = c.items
		e.wantBatch(fmt.Sprintf("ReadStream from %d, at most %d", c.from, c.max), e.read(e.key, c.from, c.max), want)
	}
	if err := e.s.Complete(ctx, l, idemstore.Result{Data: []byte("end")}); err != nil {
		t.Fatal(err)
	}
	e.wantBatch("the completed stream from item 2", e.read(e.key, 2, 0),
		batch{State: idemstore.StateCompleted, Fence: l.Fence, Count: 4, Items: []string{"", "d"}, Result: "end"})
	e.wantBatch("a key never claimed", e.read(e.key+":none", 0, 0), batch{})
}

func testStreamInOrder(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	s := e.streamer()
	if err := s.AppendItem(ctx, l, 1, []byte("gap")); err == nil {
		t.Error("AppendItem(1) of an empty stream = nil, want an error (item 0 is next)")
	}
	e.appendItems(l, 0, "a")
	if err := s.AppendItem(ctx, l, 0, []byte("a")); err != nil {
		t.Errorf("AppendItem(0) re-sent with identical data = %v, want nil", err)
	}
	if err := s.AppendItem(ctx, l, 0, []byte("other")); err == nil {
		t.Error("AppendItem(0) again with other data = nil, want an error")
	}
	if err := s.AppendItem(ctx, l, 2, []byte("gap")); err == nil {
		t.Error("AppendItem(2) after one item = nil, want an error (item 1 is next)")
	}
	e.wantBatch("the stream after refused appends", e.read(e.key, 0, 0),
		batch{State: idemstore.StateInProgress, Fence: l.Fence, Count: 1, Items: []string{"a"}})
}

func testStreamStale(t *testing.T, e *env) {
	s := e.streamer()
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	e.appendItems(l, 0, "old-0")
	e.advance(e.pastLease())
	l2 := e.mustOwn(e.key, fp("a"), idemstore.ClaimTakenOver)
	for _, c := range []struct {
		name string
		l    idemstore.Lease
		seq  uint64
	}{
		{"the stale owner's next item", l, 1},
		{"the stale owner's first item again", l, 0},
		{"a forged fence", idemstore.Lease{Key: l2.Key, Owner: l2.Owner, Fence: l2.Fence + 1}, 0},
		{"another owner with the fence", idemstore.Lease{Key: l2.Key, Owner: e.token(), Fence: l2.Fence}, 0},
	} {
		if err := s.AppendItem(ctx, c.l, c.seq, []byte("old-0")); !isLeaseLost(err) {
			t.Errorf("AppendItem by %s = %v, want ErrLeaseLost", c.name, err)
		}
	}
	e.appendItems(l2, 0, "new-0")
	if err := e.s.Complete(ctx, l2, idemstore.Result{Data: []byte("end")}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendItem(ctx, l2, 1, []byte("late")); !isLeaseLost(err) {
		t.Errorf("AppendItem after Complete = %v, want ErrLeaseLost", err)
	}
	e.wantBatch("the stream after the takeover", e.read(e.key, 0, 0),
		batch{State: idemstore.StateCompleted, Fence: l2.Fence, Count: 1, Items: []string{"new-0"}, Result: "end"})
}

// testStreamNewRun: every claim that makes its caller the owner starts
// the stream again at item 0 under a higher fence.
func testStreamNewRun(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	e.appendItems(l, 0, "a", "b")
	e.advance(e.pastLease())
	e.wantBatch("a stream whose lease ran out", e.read(e.key, 0, 0),
		batch{State: idemstore.StateInProgress, Fence: l.Fence, LeaseExpired: true, Count: 2, Items: []string{"a", "b"}})
	l2 := e.mustOwn(e.key, fp("a"), idemstore.ClaimTakenOver)
	e.newerFence(l2.Fence, l.Fence, "after the takeover")
	e.wantBatch("the stream after a takeover", e.read(e.key, 0, 0), batch{State: idemstore.StateInProgress, Fence: l2.Fence})
	e.appendItems(l2, 0, "c")
	if err := e.s.Release(ctx, l2); err != nil {
		t.Fatal(err)
	}
	if got := e.read(e.key, 0, 0); got.State != idemstore.StateReleased || got.Fence != l2.Fence {
		t.Fatalf("ReadStream of a released record = %+v, want released under fence %d", got, l2.Fence)
	}
	l3 := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	e.newerFence(l3.Fence, l2.Fence, "after the release")
	e.wantBatch("the stream after a release", e.read(e.key, 0, 0), batch{State: idemstore.StateInProgress, Fence: l3.Fence})
}

// readFor starts a waiting ReadStream of key from item from, following
// the run under fence, and returns a channel that gets its batch.
func (e *env) readFor(key string, from, fence uint64) <-chan batch {
	return await(func(rctx context.Context) batch {
		b, err := e.streamer().ReadStream(rctx, idemstore.StreamRead{Key: key, From: from, Wait: true, Fence: fence})
		if err != nil {
			b.Result = []byte("error: " + err.Error())
		}
		return asBatch(b)
	})
}

func testStreamWakes(t *testing.T, e *env) {
	ok := []byte("1")
	transitions := []struct {
		name string
		do   func(l idemstore.Lease) error
		want func(l idemstore.Lease) batch
	}{
		{"append", func(l idemstore.Lease) error { return e.streamer().AppendItem(ctx, l, 1, []byte("b")) },
			func(l idemstore.Lease) batch {
				return batch{State: idemstore.StateInProgress, Fence: l.Fence, Count: 2, Items: []string{"b"}}
			}},
		{"completion", func(l idemstore.Lease) error { return e.s.Complete(ctx, l, idemstore.Result{Data: ok}) },
			func(l idemstore.Lease) batch {
				return batch{State: idemstore.StateCompleted, Fence: l.Fence, Count: 1, Result: "1"}
			}},
		{"failure", func(l idemstore.Lease) error { return e.s.Fail(ctx, l, idemstore.Result{Data: ok}) },
			func(l idemstore.Lease) batch {
				return batch{State: idemstore.StateFailed, Fence: l.Fence, Count: 1, Result: "1"}
			}},
		{"deletion", func(l idemstore.Lease) error { return e.s.Delete(ctx, l.Key) },
			func(idemstore.Lease) batch { return batch{} }},
		{"lease expiry", func(idemstore.Lease) error { e.advance(e.pastLease()); return nil },
			func(l idemstore.Lease) batch {
				return batch{State: idemstore.StateInProgress, Fence: l.Fence, LeaseExpired: true, Count: 1}
			}},
	}
	for _, tr := range transitions {
		t.Run(tr.name, func(t *testing.T) {
			key := e.key + ":" + tr.name
			l := e.mustOwn(key, fp("a"), idemstore.ClaimAcquired)
			e.appendItems(l, 0, "a")
			got := wokenBy(t, "ReadStream", tr.name, e.readFor(key, 1, l.Fence), func() error { return tr.do(l) })
			e.wantBatch("ReadStream woken by the "+tr.name, got, tr.want(l))
		})
	}
}

// testStreamOtherRun: a waiting read that follows a run the record no
// longer has returns at once, and so does one of a key without a record.
func testStreamOtherRun(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	for _, c := range []struct {
		name  string
		key   string
		fence uint64
		want  batch
	}{
		{"another fence", e.key, l.Fence + 7, batch{State: idemstore.StateInProgress, Fence: l.Fence}},
		{"no record", e.key + ":none", 1, batch{}},
	} {
		got := within(t, e.readFor(c.key, 0, c.fence), 2*time.Second, "a waiting ReadStream of "+c.name)
		e.wantBatch("a waiting ReadStream of "+c.name, got, c.want)
	}
}

func testStreamExpire(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	e.appendItems(l, 0, "a", "b")
	if err := e.s.Complete(ctx, l, idemstore.Result{Data: []byte("end")}); err != nil {
		t.Fatal(err)
	}
	e.advance(e.ttl + e.pastLease()) // past the record's retention
	e.wantBatch("a stream past its record's retention", e.read(e.key, 0, 0), batch{})
	l2 := e.mustOwn(e.key, fp("b"), idemstore.ClaimAcquired)
	e.wantBatch("a new call's stream under the expired key", e.read(e.key, 0, 0), batch{State: idemstore.StateInProgress, Fence: l2.Fence})

	key := e.key + ":deleted"
	l = e.mustOwn(key, fp("a"), idemstore.ClaimAcquired)
	e.appendItems(l, 0, "a")
	if err := e.s.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	e.wantBatch("a deleted record's stream", e.read(key, 0, 0), batch{})
	l = e.mustOwn(key, fp("a"), idemstore.ClaimAcquired)
	e.wantBatch("a new call's stream after Delete", e.read(key, 0, 0), batch{State: idemstore.StateInProgress, Fence: l.Fence})
}

func testStreamCanceled(t *testing.T, e *env) {
	l := e.mustOwn(e.key, fp("a"), idemstore.ClaimAcquired)
	e.appendItems(l, 0, "a")
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := e.streamer().AppendItem(canceled, l, 1, []byte("b")); !errors.Is(err, context.Canceled) {
		t.Errorf("AppendItem with a canceled ctx = %v, want context.Canceled", err)
	}
	for _, wait := range []bool{false, true} {
		if _, err := e.streamer().ReadStream(canceled, idemstore.StreamRead{Key: e.key, Wait: wait}); !errors.Is(err, context.Canceled) {
			t.Errorf("ReadStream (wait %v) with a canceled ctx = %v, want context.Canceled", wait, err)
		}
	}
	e.wantBatch("the stream after canceled calls", e.read(e.key, 0, 0),
		batch{State: idemstore.StateInProgress, Fence: l.Fence, Count: 1, Items: []string{"a"}})
}

// testStreamGuard streams through a Guard on the store: a duplicate that
// attaches while the producer runs and one that replays after it
// finished get the first caller's items in order, and the function runs
// once.
func testStreamGuard(t *testing.T, e *env) {
	g := idem.NewGuard(e.s)
	spec := e.spec("stream")
	attached := make(chan struct{})
	stream, runs := e.guardedStream(g, spec, 5, func(i int) string { return fmt.Sprint("item-", i) }, func(i int) {
		if i == 2 {
			<-attached // a duplicate has read items 0 and 1
		}
	})
	first := make(chan []string, 1)
	started := make(chan struct{})
	go func() { first <- collect(stream(), started) }()
	<-started
	var dup []string
	for v, err := range stream() {
		if err != nil {
			t.Fatalf("attached duplicate: %v after %q", err, dup)
		}
		if dup = append(dup, v); len(dup) == 2 {
			close(attached)
		}
	}
	want := []string{"item-0", "item-1", "item-2", "item-3", "item-4"}
	for name, got := range map[string][]string{"first caller": <-first, "attached duplicate": dup, "replay": collect(stream(), nil)} {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("items the %s got (-want +got):\n%s", name, diff)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the function ran %d times, want 1", n)
	}
}

type idemSeq = func(yield func(string, error) bool)

// guardedStream returns a function that starts e.key's stream through g
// under spec, and the count of runs of its function, which yields n
// items, item(i) the i-th, each once before(i) (if any) returned.
func (e *env) guardedStream(g *idem.Guard, spec *idem.Spec, n int, item func(i int) string, before func(i int)) (func() idemSeq, *atomic.Int32) {
	runs := new(atomic.Int32)
	fn := func(ctx context.Context, yield func(string) bool) error {
		runs.Add(1)
		for i := range n {
			if before != nil {
				before(i)
			}
			if !yield(item(i)) {
				return nil
			}
		}
		return nil
	}
	return func() idemSeq {
		c, k := idemimpl.Begin(g, spec)
		k.Key().String(e.key)
		return idem.Stream(ctx, c, fn)
	}, runs
}

// collect ranges s to its end, closing started (if any) at the first
// item; an error is collected as its text.
func collect(s idemSeq, started chan struct{}) []string {
	var got []string
	for v, err := range s {
		if err != nil {
			return append(got, "error: "+err.Error())
		}
		if got = append(got, v); started != nil && len(got) == 1 {
			close(started)
		}
	}
	return got
}

// CheckItemTooLarge checks a store whose records are limited so that one
// stream item of 1000 bytes is too large and two of 500 are too: the
// first item is refused with idem.ErrResultTooLarge by its own size, the
// second of two by the item already recorded (its error naming wantSize,
// the size the store measured, e.g. "1307 bytes"), and nothing refused is
// recorded. It returns the lease it holds on key, whose stream holds one
// item. s must implement idemstore.Streamer.
func CheckItemTooLarge(t *testing.T, s idemstore.Store, key string, owner idemstore.Token, wantSize string) idemstore.Lease {
	t.Helper()
	st := s.(idemstore.Streamer)
	l := checkTooLarge(t, s, key, owner, wantSize, "AppendItem", func(l idemstore.Lease, n int, data []byte) error {
		return st.AppendItem(ctx, l, [...]uint64{0, 0, 1}[n], data)
	})
	b, err := st.ReadStream(ctx, idemstore.StreamRead{Key: key})
	if err != nil || b.Count != 1 {
		t.Fatalf("ReadStream after the refusals: %d items, %v; want 1", b.Count, err)
	}
	return l
}

// testStreamSealed streams items that hold sealMarker through a sealing
// Guard: the store keeps none of them in the clear, and a duplicate
// replays them.
func testStreamSealed(t *testing.T, e *env) {
	g := e.sealedGuard(t)
	spec := e.spec("sealedstream")
	stream, runs := e.guardedStream(g, spec, 3, func(i int) string { return fmt.Sprint("token ", i, " ", sealMarker) }, nil)
	first, again := collect(stream(), nil), collect(stream(), nil)
	if diff := cmp.Diff(first, again); diff != "" || len(first) != 3 || runs.Load() != 1 {
		t.Fatalf("the replay of a sealed stream (-first +replay):\n%s\nfirst %q after %d runs", diff, first, runs.Load())
	}
	c, k := idemimpl.Begin(g, spec)
	k.Key().String(e.key)
	key, _ := c.StoreKey()
	b, err := e.streamer().ReadStream(ctx, idemstore.StreamRead{Key: key})
	if err != nil || b.Count != 3 {
		t.Fatalf("ReadStream of the sealed stream: %d items, %v; want 3", b.Count, err)
	}
	var stored [][]byte
	stored = append(stored, b.Items...)
	if e.raw != nil {
		stored = append(stored, e.raw(t, e.s)...)
	}
	for _, data := range stored {
		if bytes.Contains(data, []byte(sealMarker)) {
			t.Fatalf("the store holds a stream item in the clear: %.80q", data)
		}
	}
}
