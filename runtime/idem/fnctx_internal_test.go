package idem

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fnCtxView is what a function (or a goroutine it left) can observe of
// its ctx.
type fnCtxView struct {
	Err, Cause, ChildErr string
	Done                 bool
	Running              bool // the running value reaches through the ctx
	Parent               any  // a value of the caller's ctx
}

type parentKey struct{}

// TestFnCtxAsStandard: fn's ctx, made cancelable on first need, answers
// every sequence of events exactly as the standard library's cancel ctx
// made up front would: the caller's ctx canceled, the lease lost, fn
// returning, Done asked, a child attached, in any order, with the caller's
// ctx cancelable or not.
func TestFnCtxAsStandard(t *testing.T) {
	const (
		parentCancel = iota
		leaseLost
		end
		askDone
		attachChild
		nOps
	)
	names := []string{"parent canceled", "lease lost", "fn returned", "Done asked", "child attached"}
	parentCause := errors.New("caller gone")
	type world struct {
		ctx          context.Context
		leaseLost    func()
		end          func()
		cancelParent context.CancelCauseFunc
		child        context.Context
		cancelChild  context.CancelFunc
	}
	reference := func(parent context.Context, cancelParent context.CancelCauseFunc, r *running) *world {
		ctx, cancel := context.WithCancelCause(parent)
		return &world{
			ctx:          &valueCtx{Context: ctx, run: r},
			leaseLost:    func() { cancel(ErrLeaseLost) },
			end:          func() { cancel(nil) },
			cancelParent: cancelParent,
		}
	}
	lazy := func(parent context.Context, cancelParent context.CancelCauseFunc, r *running) *world {
		c := &fnCtx{parent: parent, run: r}
		return &world{ctx: c, leaseLost: func() { c.cancel(ErrLeaseLost) }, end: c.end, cancelParent: cancelParent}
	}
	view := func(w *world, r *running) fnCtxView {
		v := fnCtxView{
			Err:     fmt.Sprint(w.ctx.Err()),
			Cause:   fmt.Sprint(context.Cause(w.ctx)),
			Running: w.ctx.Value(leaseKey{}) == r,
			Parent:  w.ctx.Value(parentKey{}),
		}
		if w.child != nil {
			v.ChildErr = fmt.Sprint(context.Cause(w.child))
		}
		return v
	}
	apply := func(w *world, op int) {
		switch op {
		case parentCancel:
			if w.cancelParent != nil {
				w.cancelParent(parentCause)
			}
		case leaseLost:
			w.leaseLost()
		case end:
			w.end()
		case askDone:
			select {
			case <-w.ctx.Done():
			default:
			}
		case attachChild:
			if w.child == nil {
				w.child, w.cancelChild = context.WithCancel(w.ctx)
			}
		}
	}
	doneAfter := func(w *world) bool {
		select {
		case <-w.ctx.Done():
			return true
		default:
			return false
		}
	}
	var seqs [][]int
	var gen func(prefix []int)
	gen = func(prefix []int) {
		seqs = append(seqs, prefix)
		if len(prefix) == 5 {
			return
		}
		for op := range nOps {
			gen(append(prefix[:len(prefix):len(prefix)], op))
		}
	}
	gen(nil)
	runs := 0
	for _, cancelable := range []bool{false, true} {
		for _, seq := range seqs {
			var got, want []fnCtxView
			for i, mk := range []func(context.Context, context.CancelCauseFunc, *running) *world{reference, lazy} {
				parent := context.WithValue(context.Background(), parentKey{}, "p")
				var cancelParent context.CancelCauseFunc
				if cancelable {
					parent, cancelParent = context.WithCancelCause(parent)
				}
				r := &running{}
				w := mk(parent, cancelParent, r)
				var views []fnCtxView
				for _, op := range seq {
					apply(w, op)
					views = append(views, view(w, r))
				}
				last := view(w, r)
				last.Done = doneAfter(w)
				views = append(views, last)
				if w.cancelChild != nil {
					w.cancelChild()
				}
				if i == 0 {
					want = views
				} else {
					got = views
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				var steps []string
				for _, op := range seq {
					steps = append(steps, names[op])
				}
				t.Errorf("cancelable parent %v, %v: fnCtx differs from the standard cancel ctx (-standard +fnCtx):\n%s", cancelable, steps, diff)
			}
			runs++
		}
	}
	t.Logf("%d sequences agree", runs)
}

// valueCtx is the reference's running value, as fnCtx carries it.
type valueCtx struct {
	context.Context
	run *running
}

func (c *valueCtx) Value(key any) any {
	if key == (leaseKey{}) {
		return c.run
	}
	return c.Context.Value(key)
}

// TestFnCtxConcurrent: goroutines asking for Done, Err and children while
// the lease is lost and fn returns all end up canceled with one cause, and
// children attach without a goroutine of their own.
func TestFnCtxConcurrent(t *testing.T) {
	for range 200 {
		parent, cancelParent := context.WithCancel(context.Background())
		c := &fnCtx{parent: parent, run: &running{}}
		before := runtime.NumGoroutine()
		var wg sync.WaitGroup
		children := make([]context.Context, 8)
		cancels := make([]context.CancelFunc, len(children))
		for i := range children {
			wg.Go(func() {
				children[i], cancels[i] = context.WithCancel(c)
				_ = c.Err()
				<-c.Done()
			})
		}
		if extra := runtime.NumGoroutine() - before; extra > len(children) {
			t.Fatalf("%d goroutines beyond the askers", extra-len(children))
		}
		wg.Go(func() { c.cancel(ErrLeaseLost) })
		wg.Go(c.end)
		wg.Wait()
		if got := context.Cause(c); got != ErrLeaseLost && got != context.Canceled {
			t.Fatalf("cause %v, want the lease lost or canceled", got)
		}
		for _, ch := range children {
			if ch.Err() == nil {
				t.Fatal("a child of fn's ctx is not canceled")
			}
		}
		for _, cancel := range cancels {
			cancel()
		}
		cancelParent()
	}
}
