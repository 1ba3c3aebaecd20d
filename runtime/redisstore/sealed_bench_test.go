package redisstore

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemseal"
)

// BenchmarkSealed is the cost of sealing records (idem.WithSealer) on
// Redis, one caller, as a ratio to the same calls without it (x-plain:
// time with / time without), interleaved in one run: a first execution
// and a replay of a small result.
func BenchmarkSealed(b *testing.B) {
	ring, err := idemseal.New(idemseal.Key{ID: "b1", Secret: bytes.Repeat([]byte{1}, 32)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, mode := range []string{"first", "replay"} {
		b.Run(mode, func(b *testing.B) {
			rdb := benchClient(b)
			s := newStore(b, rdb)
			spec := &idem.Spec{Name: "bench.sealed", TTL: time.Minute}
			run := strconv.FormatInt(time.Now().UnixNano(), 36)
			guard := func(name string, opts ...idem.Option) func(i int) {
				g := idem.NewGuard(s, opts...)
				return func(i int) {
					if mode == "replay" {
						i = 0
					}
					c := g.Begin(spec, run+":"+name+":"+strconv.Itoa(i))
					if _, err := idem.Do(ctx, c, func(context.Context) (invoice, error) {
						return invoice{ID: "inv-1", Amount: 4200, Note: "first call"}, nil
					}); err != nil {
						b.Error(err)
					}
				}
			}
			plain, sealed := guard("plain"), guard("sealed", idem.WithSealer(ring))
			plain(0)
			sealed(0)
			b.ResetTimer()
			without, with := versus(b.N, 1, func(i int) { plain(i + 1) }, func(i int) { sealed(i + 1) })
			b.StopTimer()
			b.ReportMetric(float64(with.Nanoseconds()), "ns/op")
			b.ReportMetric(float64(without.Nanoseconds()), "plain-ns/op")
			b.ReportMetric(float64(with)/float64(without), "x-plain")
		})
	}
}
