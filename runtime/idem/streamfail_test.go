package idem_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// signalAt ranges s, closing at when it has n items, and sends what it
// got to out.
func signalAt(s func(func(word, error) bool), n int, at chan<- struct{}, out chan<- streamed) {
	var got streamed
	for v, err := range s {
		if err != nil {
			got.Err = err.Error()
			break
		}
		if got.Items = append(got.Items, v); len(got.Items) == n {
			close(at)
		}
	}
	out <- got
}

func labeled(label string, from, to int) []word {
	var out []word
	for i := from; i < to; i++ {
		out = append(out, word{i, label})
	}
	return out
}

// A producer that stops renewing its lease (here: the store's clock jumps
// past it) is taken over: the stream restarts from item 0 under a new
// fence, a reader of the old run gets ErrStreamRestarted after the old
// run's items (never the new run's after them), and the old producer's
// items are refused (ErrLeaseLost).
func TestStreamTakeoverRestarts(t *testing.T) {
	clock := idemtest.NewClock(time.Now())
	g := idem.NewGuard(memstore.New(memstore.WithClock(clock.Now), memstore.WithPollInterval(2*time.Millisecond)))
	spec := &idem.Spec{Name: "streams.Takeover", Lease: 30 * time.Second, TTL: time.Hour}
	ctx := context.Background()
	hold := make(chan struct{})
	old := func(ctx context.Context, yield func(word) bool) error {
		for i := range 4 {
			if i == 3 {
				<-hold
			}
			if !yield(word{i, "old"}) {
				return nil
			}
		}
		return nil
	}
	fresh := func(ctx context.Context, yield func(word) bool) error {
		for i := range 5 {
			if !yield(word{i, "new"}) {
				return nil
			}
		}
		return nil
	}
	stream := func(fn func(context.Context, func(word) bool) error) func(func(word, error) bool) {
		return idem.Stream(ctx, g.Begin(spec, "k"), fn)
	}
	firstAt, readerAt := make(chan struct{}), make(chan struct{})
	first, reader := make(chan streamed, 1), make(chan streamed, 1)
	go signalAt(stream(old), 3, firstAt, first)
	<-firstAt
	go signalAt(stream(fresh), 3, readerAt, reader) // attaches to the old run
	<-readerAt
	clock.Advance(spec.Lease + time.Second)
	r := <-reader
	if !strings.Contains(r.Err, idem.ErrStreamRestarted.Error()) {
		t.Errorf("the old run's reader ended with %q, want ErrStreamRestarted", r.Err)
	}
	r.Err = ""
	if diff := cmp.Diff(streamed{Items: labeled("old", 0, 3)}, r); diff != "" {
		t.Errorf("the old run's reader (-want +got):\n%s", diff)
	}
	taker := rangeStream(ctx, g, spec, "k", fresh)
	close(hold)
	f := <-first
	if !strings.Contains(f.Err, idem.ErrLeaseLost.Error()) {
		t.Errorf("the old producer's caller ended with %q, want ErrLeaseLost", f.Err)
	}
	f.Err = ""
	after := rangeStream(ctx, g, spec, "k", old)
	want := []streamed{{Items: labeled("old", 0, 3)}, {Items: labeled("new", 0, 5)}, {Items: labeled("new", 0, 5)}}
	if diff := cmp.Diff(want, []streamed{f, taker, after}); diff != "" {
		t.Errorf("old producer's caller, the caller that took over, a replay (-want +got):\n%s", diff)
	}
}

// rerun calls spec's stream of n items until it runs (for at most 5s):
// until the run before it released the key.
func rerun(g *idem.Guard, spec *idem.Spec, n int) streamed {
	var runs atomic.Int32
	var got streamed
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got = rangeStream(context.Background(), g, spec, "k", tokens(n, &runs, nil)); runs.Load() > 0 {
			break
		}
	}
	return got
}

// When the first caller stops ranging or its ctx ends, the producer goes
// on recording: a later duplicate gets the whole stream, and the function
// ran once.
func TestStreamCallerLeaves(t *testing.T) {
	for _, tt := range []struct {
		name    string
		cancel  bool
		wantErr error
	}{
		{"break", false, nil},
		{"ctx canceled", true, context.Canceled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := idem.NewGuard(memstore.New())
			spec := &idem.Spec{Name: "streams.Leaves"}
			var runs atomic.Int32
			fn := tokens(40, &runs, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var n int
			var err error
			for _, e := range idem.Stream(ctx, g.Begin(spec, "k"), fn) {
				if err = e; err != nil {
					break
				}
				if n++; n == 2 {
					if !tt.cancel {
						break
					}
					cancel()
				}
			}
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("the first caller ended with %v, want %v", err, tt.wantErr)
			}
			got := rangeStream(context.Background(), g, spec, "k", fn)
			if diff := cmp.Diff(streamed{Items: wantTokens(0, 40)}, got); diff != "" {
				t.Errorf("a duplicate after the first caller left (-want +got):\n%s", diff)
			}
			if r := runs.Load(); r != 1 {
				t.Errorf("the function ran %d times, want 1", r)
			}
		})
	}
}

// A producer whose caller left and that records nothing for a whole lease
// is stopped, and the key released whatever on_failure says: it did not
// fail on its own, and a retry runs it again.
func TestStreamIdleProducerStops(t *testing.T) {
	g := idem.NewGuard(memstore.New())
	spec := &idem.Spec{Name: "streams.Idle", Lease: 150 * time.Millisecond, OnFailure: idem.FailureLock}
	stopped := make(chan error, 1)
	stuck := func(ctx context.Context, yield func(word) bool) error {
		yield(word{0, "tok-0"})
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return ctx.Err()
	}
	for range idem.Stream(context.Background(), g.Begin(spec, "k"), stuck) {
		break
	}
	select {
	case cause := <-stopped:
		if cause == nil || !strings.Contains(cause.Error(), "stream abandoned") {
			t.Errorf("the idle producer's ctx ended with cause %v, want the stream abandoned", cause)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the idle producer was not stopped within 5s")
	}
	if diff := cmp.Diff(streamed{Items: wantTokens(0, 3)}, rerun(g, spec, 3)); diff != "" {
		t.Errorf("the call after the idle producer stopped (-want +got):\n%s", diff)
	}
}

// A panic in the producer releases the key; it is re-panicked in the
// ranging caller's goroutine, and only reported once the caller left.
func TestStreamPanic(t *testing.T) {
	for _, tt := range []struct {
		name      string
		leave     bool
		wantPanic any
	}{
		{"while ranging", false, "boom"},
		{"after the caller left", true, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var failed atomic.Int32
			obs := idem.ObserverFunc(func(e idem.Event) {
				if e.Outcome == idem.OutcomeFailed && e.Err != nil && strings.Contains(e.Err.Error(), "panicked: boom") {
					failed.Add(1)
				}
			})
			g := idem.NewGuard(memstore.New(), idem.WithObserver(obs))
			spec := &idem.Spec{Name: "streams.Panic"}
			left := make(chan struct{})
			boom := func(ctx context.Context, yield func(word) bool) error {
				yield(word{0, "tok-0"})
				if tt.leave {
					<-left
				}
				panic("boom")
			}
			var p any
			func() {
				defer func() { p = recover() }()
				for range idem.Stream(context.Background(), g.Begin(spec, "k"), boom) {
					if tt.leave {
						break
					}
				}
			}()
			close(left)
			if p != tt.wantPanic {
				t.Fatalf("ranging recovered %v, want %v", p, tt.wantPanic)
			}
			if diff := cmp.Diff(streamed{Items: wantTokens(0, 2)}, rerun(g, spec, 2)); diff != "" {
				t.Errorf("the call after the panic (-want +got):\n%s", diff)
			}
			if n := failed.Load(); n != 1 {
				t.Errorf("%d failed events naming the panic, want 1", n)
			}
		})
	}
}

// Items count against the function's budget together: past it the stream
// ends with ErrResultTooLarge, recorded (the function ran), and a
// duplicate gets the same items and the same failure.
func TestStreamOverBudget(t *testing.T) {
	g := idem.NewGuard(memstore.New())
	spec := &idem.Spec{Name: "streams.Budget", MaxResult: 200}
	var runs atomic.Int32
	fn := tokens(50, &runs, nil)
	first := rangeStream(context.Background(), g, spec, "k", fn)
	dup := rangeStream(context.Background(), g, spec, "k", fn)
	if n := len(first.Items); n == 0 || n >= 50 {
		t.Fatalf("the first caller got %d items, want some, not all 50", n)
	}
	for name, s := range map[string]streamed{"first caller": first, "duplicate": dup} {
		if !strings.Contains(s.Err, idem.ErrResultTooLarge.Error()) {
			t.Errorf("the %s ended with %q, want ErrResultTooLarge", name, s.Err)
		}
	}
	if diff := cmp.Diff(first.Items, dup.Items); diff != "" {
		t.Errorf("the duplicate's items differ from the first caller's (-first +dup):\n%s", diff)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the function ran %d times, want 1", n)
	}
}

// A store that keeps no streams refuses a stream before it runs.
func TestStreamNeedsAStreamer(t *testing.T) {
	g := idem.NewGuard(noSteps{memstore.New()})
	var runs atomic.Int32
	got := rangeStream(context.Background(), g, &idem.Spec{Name: "streams.None"}, "k", tokens(2, &runs, nil))
	if !strings.Contains(got.Err, "keeps no streams") || runs.Load() != 0 {
		t.Errorf("a stream on a store without Streamer: %+v, %d runs; want refused, not run", got, runs.Load())
	}
}

// swapItems is a store whose reader swaps a batch's first two items, as
// someone who can write the store could.
type swapItems struct{ *memstore.Store }

func (s swapItems) ReadStream(ctx context.Context, req idemstore.StreamRead) (idemstore.StreamBatch, error) {
	b, err := s.Store.ReadStream(ctx, req)
	if len(b.Items) >= 2 {
		b.Items = append([][]byte{b.Items[1], b.Items[0]}, b.Items[2:]...)
	}
	return b, err
}

// A sealed item is bound to its run and position: items moved within the
// store fail to open (ErrCorruptRecord) instead of replaying out of order.
func TestStreamSealedItemsKeepTheirPlace(t *testing.T) {
	store := memstore.New()
	spec := &idem.Spec{Name: "streams.Sealed"}
	var runs atomic.Int32
	ctx := context.Background()
	rangeStream(ctx, idem.NewGuard(store, idem.WithSealer(sealer(t))), spec, "k", tokens(3, &runs, nil))
	got := rangeStream(ctx, idem.NewGuard(swapItems{store}, idem.WithSealer(sealer(t))), spec, "k", tokens(3, &runs, nil))
	if len(got.Items) != 0 || !strings.Contains(got.Err, idem.ErrCorruptRecord.Error()) {
		t.Errorf("a replay of swapped sealed items: %+v, want no items and ErrCorruptRecord", got)
	}
}
