package idem_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// BenchmarkSteps is the cost of three recovery points on the memory store,
// as a ratio to the same function without them (x-without-steps: the
// function with steps takes that many times as long), alternated in one
// run:
//
//   - first: a first execution, each step running and recorded;
//   - resumed: a call whose record holds the three steps (released after
//     an error), each step returning its recorded result; the function
//     then fails again, so the next call resumes the same record.
func BenchmarkSteps(b *testing.B) {
	ctx := context.Background()
	stepFn := func(ctx context.Context) (int, error) { return 42, nil }
	withSteps := func(fail error) func(ctx context.Context) (int, error) {
		return func(ctx context.Context) (int, error) {
			sum := 0
			for _, name := range []string{"charge", "email", "invoice"} {
				v, err := idem.Step(ctx, name, stepFn)
				if err != nil {
					return 0, err
				}
				sum += v
			}
			return sum, fail
		}
	}
	withoutSteps := func(fail error) func(ctx context.Context) (int, error) {
		return func(ctx context.Context) (int, error) {
			sum := 0
			for range 3 {
				v, _ := stepFn(ctx)
				sum += v
			}
			return sum, fail
		}
	}
	spec := &idem.Spec{Name: "bench.Steps", Lease: time.Minute, TTL: time.Hour}
	call := func(g *idem.Guard, key int, fn func(ctx context.Context) (int, error)) error {
		c, k := idemimpl.Begin(g, spec)
		k.Key().Int(int64(key))
		_, err := idem.Do(ctx, c, fn)
		return err
	}
	fresh := func(fn func(ctx context.Context) (int, error)) func(n int) {
		var g *idem.Guard
		next := 0
		return func(n int) {
			for range n {
				if next%10_000 == 0 {
					g = idem.NewGuard(memstore.New())
				}
				next++
				if err := call(g, next, fn); err != nil {
					panic(err)
				}
			}
		}
	}
	again := errors.New("fails, to be resumed")
	resumed := func(fn func(ctx context.Context) (int, error)) func(n int) {
		g := idem.NewGuard(memstore.New())
		return func(n int) {
			for range n {
				if err := call(g, 1, fn); !errors.Is(err, again) {
					panic(err)
				}
			}
		}
	}
	b.Run("first", func(b *testing.B) { ratio(b, "x-without-steps", fresh(withSteps(nil)), fresh(withoutSteps(nil))) })
	b.Run("resumed", func(b *testing.B) {
		ratio(b, "x-without-steps", resumed(withSteps(again)), resumed(withoutSteps(again)))
	})
}

// ratio runs ours and base alternately in chunks and reports ours' time
// over base's.
func ratio(b *testing.B, unit string, ours, base func(n int)) {
	tOurs, tBase := idemtest.Alternate(b, ours, base)
	b.ReportMetric(float64(tOurs.Nanoseconds())/float64(b.N), "steps-ns/op")
	b.ReportMetric(float64(tBase.Nanoseconds())/float64(b.N), "base-ns/op")
	b.ReportMetric(float64(tOurs)/float64(tBase), unit)
}
