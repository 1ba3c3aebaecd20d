package idemobs_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemobs"
	"github.com/idemgen/idemgen/runtime/idemobs/obstest"
)

type tally struct {
	name string
	log  *[]string
}

func (t tally) Observe(e idem.Event) { *t.log = append(*t.log, t.name+":"+e.Outcome.String()) }

func TestMulti(t *testing.T) {
	var log []string
	a, b, c := tally{"a", &log}, tally{"b", &log}, tally{"c", &log}
	tests := []struct {
		name string
		obs  idem.Observer
		want []string
	}{
		{"fan out in order", idemobs.Multi(a, b), []string{"a:executed", "b:executed"}},
		{"nils skipped", idemobs.Multi(nil, a, nil), []string{"a:executed"}},
		{"nested flattened", idemobs.Multi(idemobs.Multi(a, b), c), []string{"a:executed", "b:executed", "c:executed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log = nil
			tt.obs.Observe(idem.Event{Func: "f", Outcome: idem.OutcomeExecuted})
			if diff := cmp.Diff(tt.want, log); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if got := idemobs.Multi(); got != nil {
		t.Errorf("Multi() = %v, want nil so the Guard skips observing", got)
	}
	if got := idemobs.Multi(nil, nil); got != nil {
		t.Errorf("Multi(nil, nil) = %v, want nil", got)
	}
	if got, ok := idemobs.Multi(nil, a).(tally); !ok || got.name != "a" {
		t.Errorf("Multi(nil, a) = %#v, want a itself", got)
	}
}

// TestMultiThroughGuard runs the shared script through two observers
// behind Multi: both see the whole sequence.
func TestMultiThroughGuard(t *testing.T) {
	var (
		mu   sync.Mutex // heartbeat outcomes arrive on the heartbeat's goroutine
		x, y []idem.Outcome
	)
	obs := idemobs.Multi(
		idem.ObserverFunc(func(e idem.Event) { mu.Lock(); x = append(x, e.Outcome); mu.Unlock() }),
		idem.ObserverFunc(func(e idem.Event) { mu.Lock(); y = append(y, e.Outcome); mu.Unlock() }),
	)
	obstest.Run(t, obs)
	mu.Lock()
	defer mu.Unlock()
	want := make([]idem.Outcome, len(obstest.Script))
	for i, s := range obstest.Script {
		want[i] = s.Outcome
	}
	if diff := cmp.Diff(want, x); diff != "" {
		t.Errorf("first observer (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, y); diff != "" {
		t.Errorf("second observer (-want +got):\n%s", diff)
	}
}

type ctxKey struct{}

type ctxTally struct{ log *[]string }

func (c ctxTally) Observe(e idem.Event) { *c.log = append(*c.log, "ctx-less:"+e.Outcome.String()) }
func (c ctxTally) ObserveContext(ctx context.Context, e idem.Event) {
	v, _ := ctx.Value(ctxKey{}).(string)
	*c.log = append(*c.log, "ctx="+v+":"+e.Outcome.String())
}

// A Multi passes the ctx on to the members that take one.
func TestMultiObserveContext(t *testing.T) {
	var log []string
	m := idemobs.Multi(ctxTally{&log}, tally{"plain", &log})
	co, ok := m.(interface {
		ObserveContext(context.Context, idem.Event)
	})
	if !ok {
		t.Fatal("Multi does not implement ObserveContext")
	}
	co.ObserveContext(context.WithValue(context.Background(), ctxKey{}, "req-7"), idem.Event{Outcome: idem.OutcomeReplayed})
	m.Observe(idem.Event{Outcome: idem.OutcomeExecuted})
	want := []string{"ctx=req-7:replayed", "plain:replayed", "ctx-less:executed", "plain:executed"}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
