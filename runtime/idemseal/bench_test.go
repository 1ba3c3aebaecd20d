package idemseal_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemseal"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// BenchmarkSealed is the cost of sealing (and of compressing) on the
// memory store answering with stored bytes, as networked stores do, as a
// ratio to the same calls without it (x-plain: time with / time without),
// interleaved in one run: a first execution and a replay of a small
// result, and of a realistic 20 KB JSON one (TestCompression checks
// what compression saves of it).
func BenchmarkSealed(b *testing.B) {
	ring, err := idemseal.New(key("k1", 1))
	if err != nil {
		b.Fatal(err)
	}
	big := invoiceLines(270)
	small := []line{{"SKU-1", "Widget", 1, 199}}
	for _, bc := range []struct {
		name   string
		result []line
		opts   []idem.Option
	}{
		{"small/sealed", small, []idem.Option{idem.WithSealer(ring)}},
		{"20KB/sealed", big, []idem.Option{idem.WithSealer(ring)}},
		{"20KB/compressed", big, []idem.Option{idem.WithCompression(1024)}},
		{"20KB/compressed+sealed", big, []idem.Option{idem.WithCompression(1024), idem.WithSealer(ring)}},
	} {
		for _, mode := range []string{"first", "replay"} {
			b.Run(bc.name+"/"+mode, func(b *testing.B) {
				spec := &idem.Spec{Name: "bench.Sealed", TTL: time.Hour}
				ctx := context.Background()
				guard := func(opts []idem.Option) func(n int) {
					var g *idem.Guard
					next := 0
					return func(n int) {
						for range n {
							if next%1_000 == 0 {
								g = idem.NewGuard(bytesOnly{memstore.New()}, opts...)
							}
							if mode == "first" {
								next++
							} else if next == 0 {
								next = 1
							}
							c, k := idemimpl.Begin(g, spec)
							k.Key().Int(int64(next))
							if _, err := idem.Do(ctx, c, func(context.Context) ([]line, error) { return bc.result, nil }); err != nil {
								b.Fatal(err)
							}
						}
					}
				}
				with, without := guard(bc.opts), guard(nil)
				tWith, tWithout := idemtest.Alternate(b, with, without)
				b.ReportMetric(float64(tWith.Nanoseconds())/float64(b.N), "ns/op")
				b.ReportMetric(float64(tWithout.Nanoseconds())/float64(b.N), "plain-ns/op")
				b.ReportMetric(float64(tWith)/float64(tWithout), "x-plain")
			})
		}
	}
}
