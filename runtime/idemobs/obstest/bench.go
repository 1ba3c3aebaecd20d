package obstest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// replayer replays one stored key through a Guard on a memory store, the
// way a generated wrapper does (two key fields, a typed result).
type replayer struct {
	g    *idem.Guard
	spec *idem.Spec
}

func newReplayer(tb testing.TB, obs idem.Observer) *replayer {
	var opts []idem.Option
	if obs != nil {
		opts = append(opts, idem.WithObserver(obs))
	}
	r := &replayer{g: idem.NewGuard(memstore.New(), opts...), spec: &idem.Spec{Name: "bench.Charge"}}
	if _, err := r.call(); err != nil { // the first call executes; the rest replay
		tb.Fatal(err)
	}
	return r
}

var benchResult = &receipt{ID: "r"}

func (r *replayer) call() (*receipt, error) {
	c, k := idemimpl.Begin(r.g, r.spec)
	k.Key().String("cus_8f2a91")
	k.Key().String("ord_1029384756")
	return idem.Do(context.Background(), c, func(context.Context) (*receipt, error) { return benchResult, nil })
}

func (r *replayer) run(tb testing.TB, n int) {
	for i := 0; i < n; i++ {
		if _, err := r.call(); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchReplay measures a memory-store replay through a Guard observed by
// obs against the same replay on a Guard without an observer, in the same
// run: the two alternate in short blocks (in alternating order), so
// machine noise falls on both alike, and the ratio reported is the median
// of the blocks' ratios, so a burst of noise from other processes moves it
// little. It reports
//
//	x-unobserved     median of observed time / unobserved time per block pair
//	                 (1.10 = 10% overhead)
//	overhead-%       the same as a percentage
//	base-ns/op       one unobserved replay (mean)
//	observed-ns/op   one observed replay (mean)
//
// ns/op and allocs/op cover one replay of each kind.
func BenchReplay(b *testing.B, obs idem.Observer) {
	base, observed := newReplayer(b, nil), newReplayer(b, obs)
	const block = 128
	var tBase, tObs time.Duration
	ratios := make([]float64, 0, b.N/block+1)
	b.ReportAllocs()
	b.ResetTimer()
	for done, flip := 0, false; done < b.N; flip = !flip {
		n := min(block, b.N-done)
		first, second := base, observed
		if flip {
			first, second = observed, base
		}
		t0 := time.Now()
		first.run(b, n)
		t1 := time.Now()
		second.run(b, n)
		t2 := time.Now()
		dBase, dObs := t1.Sub(t0), t2.Sub(t1)
		if flip {
			dBase, dObs = dObs, dBase
		}
		tBase, tObs = tBase+dBase, tObs+dObs
		ratios = append(ratios, float64(dObs)/float64(dBase))
		done += n
	}
	b.StopTimer()
	slices.Sort(ratios)
	ratio := ratios[len(ratios)/2]
	b.ReportMetric(ratio, "x-unobserved")
	b.ReportMetric((ratio-1)*100, "overhead-%")
	b.ReportMetric(float64(tBase.Nanoseconds())/float64(b.N), "base-ns/op")
	b.ReportMetric(float64(tObs.Nanoseconds())/float64(b.N), "observed-ns/op")
}
