package redisstore

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
)

// BenchmarkSteps is the cost of three recovery points on Redis, one
// caller, as a ratio to the same function without them (x-without-steps:
// the function with steps takes that many times as long), interleaved in
// one run:
//
//   - first: a first execution, each step a SaveStep round trip;
//   - resumed: a call whose record holds the three steps (released after
//     an error), each step returning its recorded result with no round
//     trip; the function fails again, so the next call resumes the record.
func BenchmarkSteps(b *testing.B) {
	ctx := context.Background()
	stepFn := func(context.Context) (int, error) { return 42, nil }
	again := errors.New("fails, to be resumed")
	body := func(steps bool, fail error) func(ctx context.Context) (int, error) {
		return func(ctx context.Context) (int, error) {
			sum := 0
			for _, name := range []string{"charge", "email", "invoice"} {
				v, err := stepFn(ctx)
				if steps {
					v, err = idem.Step(ctx, name, stepFn)
				}
				if err != nil {
					return 0, err
				}
				sum += v
			}
			return sum, fail
		}
	}
	for _, mode := range []string{"first", "resumed"} {
		b.Run(mode, func(b *testing.B) {
			s := newStore(b, benchClient(b))
			g := idem.NewGuard(s)
			spec := &idem.Spec{Name: "bench.steps", Lease: time.Minute, TTL: time.Minute}
			run := strconv.FormatInt(time.Now().UnixNano(), 36)
			call := func(key string, steps bool) {
				c := g.Begin(spec, key)
				var fail error
				if mode == "resumed" {
					fail = again
				}
				if _, err := idem.Do(ctx, c, body(steps, fail)); err != fail && !errors.Is(err, fail) {
					b.Error(err)
				}
			}
			key := func(steps bool, i int) string {
				if mode == "resumed" {
					i = 0 // one record, resumed by every call
				}
				return run + ":" + strconv.FormatBool(steps) + ":" + strconv.Itoa(i)
			}
			call(key(true, 0), true)
			call(key(false, 0), false)
			b.ResetTimer()
			without, with := versus(b.N, 1, func(i int) { call(key(false, i+1), false) }, func(i int) { call(key(true, i+1), true) })
			b.StopTimer()
			b.ReportMetric(float64(with.Nanoseconds()), "ns/op")
			b.ReportMetric(float64(without.Nanoseconds()), "without-ns/op")
			b.ReportMetric(float64(with)/float64(without), "x-without-steps")
		})
	}
}
