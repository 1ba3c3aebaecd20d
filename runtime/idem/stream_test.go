package idem_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemseal"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// word is a stream's item in these tests.
type word struct {
	N    int
	Text string
}

// tokens yields n tokens, pausing every 10th (so duplicates attach at
// many moments), then returns end.
func tokens(n int, runs *atomic.Int32, end error) func(context.Context, func(word) bool) error {
	return func(ctx context.Context, yield func(word) bool) error {
		runs.Add(1)
		for i := range n {
			if i%10 == 9 {
				time.Sleep(time.Millisecond)
			}
			if !yield(word{i, fmt.Sprint("tok-", i)}) {
				return nil
			}
		}
		return end
	}
}

func wantTokens(from, to int) []word {
	var out []word
	for i := from; i < to; i++ {
		out = append(out, word{i, fmt.Sprint("tok-", i)})
	}
	return out
}

// streamed is what one ranging of a stream got.
type streamed struct {
	Items []word
	Err   string
}

func rangeStream(ctx context.Context, g *idem.Guard, spec *idem.Spec, key string, fn func(context.Context, func(word) bool) error) streamed {
	var out streamed
	for v, err := range idem.Stream(ctx, g.Begin(spec, key), fn) {
		if err != nil {
			out.Err = err.Error()
			break
		}
		out.Items = append(out.Items, v)
	}
	return out
}

// 50 duplicates attaching at random moments of a 200-item stream, and 5
// more after it finished, get the first caller's items in order and the
// same end; the function runs once.
func TestStreamDuplicatesAttach(t *testing.T) {
	for _, tt := range []struct {
		name    string
		end     error
		opts    []idem.Option
		wantErr string // a duplicate's; the first caller gets end itself
	}{
		{"completed", nil, nil, ""},
		{"failed", errors.New("model overloaded"), nil, "idem: streams.Attach failed earlier: model overloaded"},
		{"sealed and compressed", nil, []idem.Option{idem.WithSealer(sealer(t)), idem.WithCompression(8)}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			leaks := goleak.IgnoreCurrent()
			g := idem.NewGuard(memstore.New(), tt.opts...)
			spec := &idem.Spec{Name: "streams.Attach", OnFailure: idem.FailureLock, Lease: 5 * time.Second, TTL: time.Hour}
			var runs atomic.Int32
			fn := tokens(200, &runs, tt.end)
			ctx := context.Background()
			started := make(chan struct{})
			first := make(chan streamed, 1)
			go func() {
				var out streamed
				for v, err := range idem.Stream(ctx, g.Begin(spec, "k"), fn) {
					if err != nil {
						out.Err = err.Error()
						break
					}
					if out.Items = append(out.Items, v); len(out.Items) == 1 {
						close(started)
					}
				}
				first <- out
			}()
			<-started
			var wg sync.WaitGroup
			got := make([]streamed, 50)
			for i := range got {
				wg.Add(1)
				go func() {
					defer wg.Done()
					time.Sleep(time.Duration(rand.IntN(25000)) * time.Microsecond)
					got[i] = rangeStream(ctx, g, spec, "k", fn)
				}()
			}
			wg.Wait()
			for range 5 {
				got = append(got, rangeStream(ctx, g, spec, "k", fn))
			}
			wantFirst := streamed{Items: wantTokens(0, 200)}
			if tt.end != nil {
				wantFirst.Err = tt.end.Error()
			}
			if diff := cmp.Diff(wantFirst, <-first); diff != "" {
				t.Errorf("the first caller (-want +got):\n%s", diff)
			}
			want := streamed{Items: wantTokens(0, 200), Err: tt.wantErr}
			for i, s := range got {
				if diff := cmp.Diff(want, s); diff != "" {
					t.Fatalf("duplicate %d (-want +got):\n%s", i, diff)
				}
			}
			if n := runs.Load(); n != 1 {
				t.Errorf("the function ran %d times, want 1", n)
			}
			goleak.VerifyNone(t, leaks)
		})
	}
}

func sealer(t *testing.T) idem.Sealer {
	t.Helper()
	k, err := idemseal.New(idemseal.Key{ID: "k1", Secret: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Under on_failure=unlock a failed stream is not recorded: the first
// caller gets its error, and the next call runs it again.
func TestStreamFailureUnlock(t *testing.T) {
	g := idem.NewGuard(memstore.New())
	spec := &idem.Spec{Name: "streams.Unlock"}
	var runs atomic.Int32
	fn := tokens(3, &runs, errors.New("declined"))
	for i := range 2 {
		got := rangeStream(context.Background(), g, spec, "k", fn)
		if diff := cmp.Diff(streamed{Items: wantTokens(0, 3), Err: "declined"}, got); diff != "" {
			t.Fatalf("call %d (-want +got):\n%s", i, diff)
		}
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("the function ran %d times, want 2 (unlock releases the key)", n)
	}
}

// The modes of on_duplicate for a stream: return and wait attach, raise
// refuses.
func TestStreamDuplicateModes(t *testing.T) {
	for _, tt := range []struct {
		mode                  idem.OnDuplicate
		wantRunning, wantDone string
	}{
		{idem.DuplicateReturn, "", ""},
		{idem.DuplicateWait, "", ""},
		{idem.DuplicateRaise, idem.ErrInProgress.Error(), "streams.Modes: " + idem.ErrDuplicate.Error()},
	} {
		t.Run(fmt.Sprint(tt.mode), func(t *testing.T) {
			g := idem.NewGuard(memstore.New())
			spec := &idem.Spec{Name: "streams.Modes", OnDuplicate: tt.mode}
			hold := make(chan struct{})
			fn := func(ctx context.Context, yield func(word) bool) error {
				yield(word{0, "tok-0"})
				<-hold
				return nil
			}
			started := make(chan struct{})
			done := make(chan streamed, 1)
			go func() {
				for range idem.Stream(context.Background(), g.Begin(spec, "k"), fn) {
					close(started)
				}
				done <- streamed{}
			}()
			<-started
			time.AfterFunc(20*time.Millisecond, func() { close(hold) })
			running := rangeStream(context.Background(), g, spec, "k", fn)
			<-done
			after := rangeStream(context.Background(), g, spec, "k", fn)
			var want []word
			if tt.wantRunning == "" {
				want = wantTokens(0, 1)
			}
			if diff := cmp.Diff([]streamed{{want, tt.wantRunning}, {want, tt.wantDone}}, []streamed{running, after}); diff != "" {
				t.Errorf("a duplicate while running, after (-want +got):\n%s", diff)
			}
		})
	}
}

// StreamFrom: a caller resumes from item n of the run its cursor names,
// during the run or after it; a cursor of another run is
// ErrStreamRestarted and is reset.
func TestStreamFrom(t *testing.T) {
	g := idem.NewGuard(memstore.New())
	spec := &idem.Spec{Name: "streams.From"}
	var runs atomic.Int32
	ctx := context.Background()
	// The first caller starts at item 2 and stops after item 4.
	cur := &idem.StreamCursor{Next: 2}
	var got []word
	for v, err := range idem.Stream(idem.StreamFrom(ctx, cur), g.Begin(spec, "k"), tokens(10, &runs, nil)) {
		if err != nil {
			t.Fatal(err)
		}
		if got = append(got, v); v.N == 4 {
			break
		}
	}
	if diff := cmp.Diff(wantTokens(2, 5), got); diff != "" {
		t.Fatalf("items from 2 (-want +got):\n%s", diff)
	}
	run := cur.Run
	if run == 0 || cur.Next != 5 {
		t.Fatalf("cursor after item 4 = %+v, want run set and next 5", *cur)
	}
	for _, tt := range []struct {
		name    string
		cur     idem.StreamCursor
		want    streamed
		wantCur idem.StreamCursor
	}{
		{"resumed", idem.StreamCursor{Run: run, Next: 5}, streamed{Items: wantTokens(5, 10)}, idem.StreamCursor{Run: run, Next: 10}},
		{"any run", idem.StreamCursor{Next: 8}, streamed{Items: wantTokens(8, 10)}, idem.StreamCursor{Run: run, Next: 10}},
		{"past the end", idem.StreamCursor{Run: run, Next: 12}, streamed{}, idem.StreamCursor{Run: run, Next: 12}},
		{"another run", idem.StreamCursor{Run: run + 1, Next: 3},
			streamed{Err: fmt.Sprintf("streams.From: %v: the stream's current run is the one under fence %d; 3 items of the run under fence %d were read: range the stream again, from item 0",
				idem.ErrStreamRestarted, run, run+1)}, idem.StreamCursor{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cur := tt.cur
			got := rangeStream(idem.StreamFrom(ctx, &cur), g, spec, "k", tokens(10, &runs, nil))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			if cur != tt.wantCur {
				t.Errorf("cursor = %+v, want %+v", cur, tt.wantCur)
			}
		})
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the function ran %d times, want 1", n)
	}
}

// Every ranging reports exactly one final event: executed for the
// producer (when its run ends, after its caller may have left), replayed
// for each reader.
func TestStreamOneFinalEventPerRanging(t *testing.T) {
	var mu sync.Mutex
	finals := map[string]int{}
	obs := idem.ObserverFunc(func(e idem.Event) {
		if e.Final {
			mu.Lock()
			finals[e.Outcome.String()]++
			mu.Unlock()
		}
	})
	g := idem.NewGuard(memstore.New(), idem.WithObserver(obs))
	spec := &idem.Spec{Name: "streams.Final"}
	var runs atomic.Int32
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rangeStream(context.Background(), g, spec, "k", tokens(50, &runs, nil))
		}()
	}
	wg.Wait()
	rangeStream(context.Background(), g, spec, "k", tokens(50, &runs, nil))
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(map[string]int{"executed": 1, "replayed": 6}, finals); diff != "" {
		t.Errorf("final events by outcome (-want +got):\n%s", diff)
	}
}
