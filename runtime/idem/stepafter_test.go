package idem_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/filestore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// A step called with the ctx of a call that has returned (from a goroutine
// the function left running) is outside a guarded call: ErrStep, and its
// function does not run.
func TestStepAfterReturn(t *testing.T) {
	stores := []struct {
		name string
		new  func(t *testing.T) idem.Store
	}{
		{"memory", func(*testing.T) idem.Store { return memstore.New() }},
		{"file", func(t *testing.T) idem.Store {
			s, err := filestore.New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	}
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
