package idem_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/filestore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// A step called with the ctx of a call that has returned (from a goroutine
// the function left running) is outside a guarded call: ErrStep, and its
// function does not run.
func TestStepAfterReturn(t *testing.T) {
	stores := inModuleStores
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			g := idem.NewGuard(st.new(t))
			var late context.Context
			if _, err := doOrder(context.Background(), g, "late", func(ctx context.Context) (string, error) {
				late = ctx
				return "done", nil
			}); err != nil {
				t.Fatal(err)
			}
			ran := 0
			v, err := idem.Step(late, "charge", func(context.Context) (string, error) { ran++; return "ch_1", nil })
			type outcome struct {
				V       string
				Ran     int
				ErrStep bool
			}
			got := outcome{v, ran, errors.Is(err, idem.ErrStep)}
			if diff := cmp.Diff(outcome{ErrStep: true}, got); diff != "" {
				t.Errorf("a step after the call returned (-want +got):\n%s\nerr: %v", diff, err)
			}
			if _, err := idem.StepKey(late, "charge"); err != nil {
				t.Errorf("StepKey after return: %v (the key names the step, whether or not it can run)", err)
			}
		})
	}
}

// lostBeats answers every heartbeat with ErrLeaseLost: another owner took
// the key over.
type lostBeats struct{ idemstore.Store }

func (lostBeats) Heartbeat(context.Context, idemstore.Lease) error { return idem.ErrLeaseLost }

func (s lostBeats) SaveStep(ctx context.Context, l idemstore.Lease, name string, data []byte) error {
	return s.Store.(idemstore.Stepper).SaveStep(ctx, l, name, data)
}

// A step called once the call's lease is lost does not run: another owner
// may be running the call, and its steps, now. It returns ErrLeaseLost.
func TestStepAfterLeaseLost(t *testing.T) {
	g := idem.NewGuard(lostBeats{memstore.New()})
	spec := &idem.Spec{Name: "steps.Lost", Lease: 30 * time.Millisecond, TTL: time.Hour}
	c := g.Begin(spec, "o1")
	ran := 0
	var serr error
	_, err := idem.Do(context.Background(), c, func(ctx context.Context) (string, error) {
		<-ctx.Done() // the first heartbeat finds the lease lost
		_, serr = idem.Step(ctx, "charge", func(context.Context) (string, error) { ran++; return "ch_1", nil })
		return "done", nil
	})
	type outcome struct{ Ran, StepLeaseLost, CallLeaseLost bool }
	got := outcome{ran > 0, errors.Is(serr, idem.ErrLeaseLost), errors.Is(err, idem.ErrLeaseLost)}
	if diff := cmp.Diff(outcome{StepLeaseLost: true, CallLeaseLost: true}, got); diff != "" {
		t.Errorf("(-want +got):\n%s\nstep: %v\ncall: %v", diff, serr, err)
	}
}

// inModuleStores are the stores of this module, for tests that must hold
// on a store in process and on one that keeps records outside it.
var inModuleStores = []struct {
	name string
	new  func(t *testing.T) idemstore.Store
}{
	{"memory", func(*testing.T) idemstore.Store { return memstore.New() }},
	{"file", func(t *testing.T) idemstore.Store {
		s, err := filestore.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}
