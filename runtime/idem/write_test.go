package idem_test

import (
	"context"
	"errors"
	"net"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	. "github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// A function that runs longer than the write timeout (kept alive by
// heartbeats) must still get its result recorded: the bound on the
// writes after it returns counts from when it returned, not from when it
// started.
func TestWriteTimeoutCountsFromReturn(t *testing.T) {
	defer SetWriteTimeoutFloor(100 * time.Millisecond)()

	store := memstore.New()
	g := NewGuard(store)
	// A lease long enough that scheduling delays under -race on a loaded
	// 2-core machine do not look like failed heartbeats (30ms flaked).
	spec := &Spec{Name: "test.LongRun", Lease: 150 * time.Millisecond}
	c := g.Begin(spec, "long")
	got, err := Do(context.Background(), c, func(ctx context.Context) (string, error) {
		select {
		case <-time.After(600 * time.Millisecond): // 4 leases, 4 write timeouts
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
		return "done", nil
	})
	if err != nil || got != "done" {
		t.Fatalf("long call = %q, %v; want done, nil", got, err)
	}
	key, _ := g.Begin(spec, "long").StoreKey()
	r, err := store.Get(context.Background(), key)
	if err != nil || r.State != idemstore.StateCompleted {
		t.Fatalf("record after a long call = %v, %v; want completed", r.State, err)
	}
}

type ctxKey struct{}

func TestWriteCtx(t *testing.T) {
	defer SetWriteTimeoutFloor(30 * time.Millisecond)()
	// A store that may do I/O: only Store's methods, not InProcess.
	g := NewGuard(struct{ idemstore.Store }{memstore.New()})

	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	cancelParent() // the caller gave up: the writes must still run
	ctx, cancel := g.WriteCtx(parent, idemstore.Lease{Duration: 10 * time.Millisecond})
	defer cancel()
	if ctx.Err() != nil {
		t.Fatalf("write ctx ended with its parent: %v", ctx.Err())
	}
	if ctx.Value(ctxKey{}) != "v" {
		t.Fatal("write ctx lost its parent's values")
	}
	dl, ok := ctx.Deadline()
	if !ok || time.Until(dl) > 30*time.Millisecond || time.Until(dl) < 20*time.Millisecond {
		t.Fatalf("deadline %v (%v from now), want ~30ms (the floor, over a shorter lease)", dl, time.Until(dl))
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("write ctx did not end at its deadline")
	}
	if ctx.Err() != context.DeadlineExceeded {
		t.Fatalf("Err = %v, want DeadlineExceeded", ctx.Err())
	}

	ctx2, cancel2 := g.WriteCtx(context.Background(), idemstore.Lease{Duration: time.Hour})
	cancel2()
	if ctx2.Err() != context.Canceled {
		t.Fatalf("Err after cancel = %v, want Canceled", ctx2.Err())
	}
}

// An in-process store's writes need no timer: they get the caller's ctx
// without its cancelation (the ctx itself when it cannot be canceled).
func TestWriteCtxInProcess(t *testing.T) {
	g := NewGuard(memstore.New())
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	cancelParent()
	ctx, cancel := g.WriteCtx(parent, idemstore.Lease{Duration: time.Millisecond})
	defer cancel()
	if ctx.Err() != nil || ctx.Done() != nil {
		t.Fatalf("write ctx of a canceled parent: Err %v, Done %v; want neither", ctx.Err(), ctx.Done())
	}
	if ctx.Value(ctxKey{}) != "v" {
		t.Fatal("write ctx lost its parent's values")
	}
	if dl, ok := ctx.Deadline(); ok {
		t.Fatalf("in-process write ctx has deadline %v, want none", dl)
	}
	bg := context.Background()
	if ctx, _ := g.WriteCtx(bg, idemstore.Lease{}); ctx != bg {
		t.Fatalf("write ctx of Background = %v, want Background itself", ctx)
	}
}

// deriving is a store whose Complete derives many contexts from the write
// ctx it is given, as pgstore does on every write, and counts the
// goroutines that are running meanwhile.
type deriving struct {
	*memstore.Store
	children int
	extra    int
}

func (s *deriving) Complete(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	before := runtime.NumGoroutine()
	cancels := make([]context.CancelFunc, s.children)
	for i := range cancels {
		_, cancels[i] = context.WithCancel(ctx)
	}
	s.extra = runtime.NumGoroutine() - before
	for _, c := range cancels {
		c()
	}
	return s.Store.Complete(ctx, l, r)
}

// Hostile case: the write ctx was a hand-written Context, so every context
// derived from it started a watcher goroutine (100 children, +100
// goroutines). The standard library's attaches children without one.
func TestWriteCtxChildrenStartNoGoroutines(t *testing.T) {
	s := &deriving{Store: memstore.New(), children: 100}
	g := NewGuard(s)
	c := g.Begin(&Spec{Name: "test.Derive"}, "k")
	if _, err := Do(context.Background(), c, func(context.Context) (int, error) { return 1, nil }); err != nil {
		t.Fatal(err)
	}
	if s.extra > 2 { // slack for an unrelated runtime goroutine
		t.Fatalf("deriving 100 contexts from the write ctx started %d goroutines, want none", s.extra)
	}
}

// refusedStore fails every claim as a dial to a closed port does.
type refusedStore struct{ *memstore.Store }

func (refusedStore) Claim(context.Context, idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	return idemstore.ClaimResult{}, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// A claim refused at the dial sent nothing: the Guard must not start a
// search for it (during an outage that would add a look-up per call).
func TestRefusedClaimIsNoOrphan(t *testing.T) {
	g := NewGuard(refusedStore{memstore.New()})
	for i := range 10 {
		c, k := idemimpl.Begin(g, &Spec{Name: "test.Refused"})
		k.Key().Int(int64(i))
		if _, err := Do(context.Background(), c, func(context.Context) (int, error) { return 1, nil }); !errors.Is(err, ErrStoreUnavailable) {
			t.Fatalf("err = %v, want ErrStoreUnavailable", err)
		}
	}
	if n := g.Orphans(); n != 0 {
		t.Fatalf("%d orphaned claims remembered for refused dials, want 0", n)
	}
}
