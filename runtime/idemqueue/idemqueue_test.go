package idemqueue_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemcall"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemqueue"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

type outcome struct {
	Status  idemqueue.Status
	Err     string // "" or a sentinel name
	Handled int64  // handler runs so far
}

func classify(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, idem.ErrInvalidKey):
		return "invalid"
	case errors.Is(err, idem.ErrPayloadMismatch):
		return "mismatch"
	case errors.Is(err, idem.ErrInProgress):
		return "in_progress"
	case errors.Is(err, idem.ErrStoreUnavailable):
		return "store"
	case errors.As(err, new(*idemqueue.PanicError)):
		return "panic"
	case errors.Is(err, errBusiness):
		return "business"
	default:
		return "other: " + err.Error()
	}
}

var errBusiness = errors.New("payment gateway said no")

type delivery struct {
	id      string
	payload []byte // with ProcessPayload when usePayload
	usePay  bool
	fail    bool // handler returns errBusiness
	panics  bool
}

func TestProcess(t *testing.T) {
	ran := func(n int64) outcome { return outcome{Status: idemqueue.Ran, Handled: n} }
	dup := func(n int64) outcome { return outcome{Status: idemqueue.Duplicate, Handled: n} }
	failed := func(err string, n int64) outcome { return outcome{Status: idemqueue.Failed, Err: err, Handled: n} }
	tests := []struct {
		name string
		in   []delivery
		want []outcome
	}{
		{"once then duplicates", []delivery{{id: "e1"}, {id: "e1"}, {id: "e1"}}, []outcome{ran(1), dup(1), dup(1)}},
		{"distinct events both run", []delivery{{id: "e1"}, {id: "e2"}, {id: "e1"}}, []outcome{ran(1), ran(2), dup(2)}},
		{"failure is redelivered and runs again", []delivery{{id: "e1", fail: true}, {id: "e1"}, {id: "e1"}},
			[]outcome{failed("business", 1), ran(2), dup(2)}},
		{"panic is Failed and releases the key", []delivery{{id: "e1", panics: true}, {id: "e1"}},
			[]outcome{failed("panic", 1), ran(2)}},
		{"empty ID is invalid", []delivery{{id: ""}}, []outcome{failed("invalid", 0)}},
		{"256-byte ID is invalid", []delivery{{id: strings.Repeat("x", 256)}}, []outcome{failed("invalid", 0)}},
		{"255-byte ID is fine", []delivery{{id: strings.Repeat("x", 255)}}, []outcome{ran(1)}},
		{"payload: same is a duplicate, different a mismatch", []delivery{
			{id: "e1", usePay: true, payload: []byte("a")},
			{id: "e1", usePay: true, payload: []byte("a")},
			{id: "e1", usePay: true, payload: []byte("b")},
			{id: "e1", usePay: true, payload: nil},
		}, []outcome{ran(1), dup(1), failed("mismatch", 1), failed("mismatch", 1)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := idemqueue.New(idem.NewGuard(memstore.New()), idemcall.WithName("test.events"))
			var handled atomic.Int64
			var got []outcome
			for _, d := range tc.in {
				h := func(ctx context.Context) error {
					handled.Add(1)
					if _, ok := idem.FenceFrom(ctx); !ok {
						t.Error("handler ctx has no fence")
					}
					if d.panics {
						panic("boom")
					}
					if d.fail {
						return errBusiness
					}
					return nil
				}
				var st idemqueue.Status
				var err error
				if d.usePay {
					st, err = c.ProcessPayload(context.Background(), d.id, d.payload, h)
				} else {
					st, err = c.Process(context.Background(), d.id, h)
				}
				got = append(got, outcome{Status: st, Err: classify(err), Handled: handled.Load()})
				if st == idemqueue.Failed && (classify(err) == "invalid" || classify(err) == "mismatch") != idemqueue.IsPermanent(err) {
					t.Errorf("IsPermanent(%v) wrong", err)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConcurrentDeliveries: redeliveries of one event racing on several
// consumers (one Guard each, one shared store) run the handler once; with
// waiting on, every other delivery is a Duplicate.
func TestConcurrentDeliveries(t *testing.T) {
	store := memstore.New()
	var consumers []*idemqueue.Consumer
	for range 4 {
		consumers = append(consumers, idemqueue.New(idem.NewGuard(store), idemcall.WithWait(5*time.Second)))
	}
	var handled atomic.Int64
	const n = 40
	statuses := make([]idemqueue.Status, n)
	var wg sync.WaitGroup
	gun := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gun
			st, err := consumers[i%len(consumers)].Process(context.Background(), "evt-1", func(context.Context) error {
				handled.Add(1)
				time.Sleep(30 * time.Millisecond)
				return nil
			})
			if err != nil {
				t.Errorf("delivery %d: %v", i, err)
			}
			statuses[i] = st
		}()
	}
	close(gun)
	wg.Wait()
	count := map[idemqueue.Status]int{}
	for _, s := range statuses {
		count[s]++
	}
	if diff := cmp.Diff(map[idemqueue.Status]int{idemqueue.Ran: 1, idemqueue.Duplicate: n - 1}, count); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if handled.Load() != 1 {
		t.Errorf("handler ran %d times", handled.Load())
	}
}

func TestNoWait(t *testing.T) {
	c := idemqueue.New(idem.NewGuard(memstore.New()), idemcall.WithWait(0))
	started, release := make(chan struct{}), make(chan struct{})
	go c.Process(context.Background(), "e", func(context.Context) error { close(started); <-release; return nil })
	<-started
	st, err := c.Process(context.Background(), "e", func(context.Context) error { return nil })
	close(release)
	if st != idemqueue.Failed || !errors.Is(err, idem.ErrInProgress) || st.Ack() {
		t.Errorf("got %v, %v; want Failed, ErrInProgress", st, err)
	}
}

// TestCrashedConsumerTakenOver: a consumer that died mid-handler left an
// in-progress record nobody heartbeats; the redelivery waits for its lease
// to expire, takes the event over with a higher fence, and runs it.
func TestCrashedConsumerTakenOver(t *testing.T) {
	store := memstore.New(memstore.WithPollInterval(5 * time.Millisecond))
	g := idem.NewGuard(store)

	// The dead consumer's claim, made directly in the store.
	call, k := idemimpl.Begin(g, &idem.Spec{Name: "test.crash"})
	k.Key().ID("evt-crash")
	key, err := call.StoreKey()
	if err != nil {
		t.Fatal(err)
	}
	var fp idemstore.Fingerprint
	if _, err := hex.Decode(fp[:], []byte(key[len(key)-64:])); err != nil {
		t.Fatal(err)
	}
	res, err := store.Claim(context.Background(), idemstore.ClaimRequest{
		Key: key, Fingerprint: fp, Owner: idemstore.Token{1}, Lease: 100 * time.Millisecond, TTL: time.Hour,
	})
	if err != nil || res.Status != idemstore.ClaimAcquired {
		t.Fatalf("dead consumer's claim: %+v %v", res, err)
	}

	c := idemqueue.New(g, idemcall.WithName("test.crash"), idemcall.WithWait(5*time.Second))
	var fence uint64
	start := time.Now()
	st, err := c.Process(context.Background(), "evt-crash", func(ctx context.Context) error {
		fence, _ = idem.FenceFrom(ctx)
		return nil
	})
	if st != idemqueue.Ran || err != nil || fence != 2 {
		t.Fatalf("got %v %v fence %d; want Ran with fence 2", st, err, fence)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Errorf("took over after %v, before the dead owner's lease expired", waited)
	}
	st, _ = c.Process(context.Background(), "evt-crash", func(context.Context) error { return nil })
	if st != idemqueue.Duplicate {
		t.Errorf("after takeover: %v", st)
	}
}

func TestStoreUnavailable(t *testing.T) {
	s := idemtest.NewOutageStore()
	c := idemqueue.New(idem.NewGuard(s))
	var handled atomic.Int64
	h := func(context.Context) error { handled.Add(1); return nil }

	s.ClaimDown.Store(true)
	st, err := c.Process(context.Background(), "e1", h)
	if st != idemqueue.Failed || classify(err) != "store" || handled.Load() != 0 {
		t.Errorf("claim down: %v %v handled %d", st, err, handled.Load())
	}
	s.ClaimDown.Store(false)

	// The handler ran but the outcome could not be recorded: Ran (ack),
	// with the error saying so.
	s.CompleteDown.Store(true)
	st, err = c.Process(context.Background(), "e2", h)
	if st != idemqueue.Ran || classify(err) != "store" || handled.Load() != 1 {
		t.Errorf("complete down: %v %v handled %d", st, err, handled.Load())
	}
	s.CompleteDown.Store(false)

	// A handler error that itself wraps ErrStoreUnavailable is Failed.
	st, err = c.Process(context.Background(), "e3", func(context.Context) error {
		return fmt.Errorf("my db: %w", idem.ErrStoreUnavailable)
	})
	if st != idemqueue.Failed || err == nil {
		t.Errorf("handler error: %v %v", st, err)
	}
}

func TestPackageProcess(t *testing.T) {
	g := idem.NewGuard(memstore.New())
	var got []idemqueue.Status
	for range 2 {
		st, err := idemqueue.Process(context.Background(), g, "e", func(context.Context) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, st)
	}
	if diff := cmp.Diff([]idemqueue.Status{idemqueue.Ran, idemqueue.Duplicate}, got); diff != "" {
		t.Error(diff)
	}
	// A differently named consumer is its own key space.
	st, _ := idemqueue.New(g, idemcall.WithName("other")).Process(context.Background(), "e", func(context.Context) error { return nil })
	if st != idemqueue.Ran {
		t.Errorf("other key space: %v", st)
	}
}

func TestStatus(t *testing.T) {
	type row struct {
		S   string
		Ack bool
	}
	var got []row
	for _, s := range []idemqueue.Status{idemqueue.Ran, idemqueue.Duplicate, idemqueue.Failed, 0} {
		got = append(got, row{s.String(), s.Ack()})
	}
	want := []row{{"ran", true}, {"duplicate", true}, {"failed", false}, {"status(0)", false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}
