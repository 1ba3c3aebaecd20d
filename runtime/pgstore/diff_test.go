package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
)

var timeEqual = cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })

func errClass(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, idem.ErrLeaseLost):
		return "lease_lost"
	case errors.Is(err, idem.ErrNotFound):
		return "not_found"
	default:
		return "error: " + err.Error()
	}
}

// TestDifferentialAgainstMemory drives the memory store (the reference
// semantics) and the Postgres store with the same random operations under
// one manual clock and requires identical answers: claim statuses, fences,
// lease times, results, records, fenced-write outcomes and cleanup counts.
func TestDifferentialAgainstMemory(t *testing.T) {
	pool := newPool(t, nil)
	ctx := context.Background()
	const seeds, ops = 4, 250
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			clock := newManualClock()
			mem := memstore.New(memstore.WithClock(clock.Now))
			pg := newStore(t, pool, WithClock(clock.Now))
			rng := rand.New(rand.NewPCG(seed, 99))
			keys := []string{"k0", "k1", "k2"}
			leasesD := []time.Duration{100 * time.Millisecond, time.Second}
			ttls := []time.Duration{500 * time.Millisecond, 5 * time.Second}
			datas := [][]byte{nil, []byte{}, []byte("x"), []byte(`{"a":1}`)}
			var leases []idemstore.Lease
			var owner byte
			for i := range ops {
				step := fmt.Sprintf("op %d", i)
				switch op := rng.IntN(12); {
				case op < 4:
					owner++
					req := idemstore.ClaimRequest{
						Key:         keys[rng.IntN(len(keys))],
						Fingerprint: fingerprint(byte(rng.IntN(2))),
						Owner:       token(owner),
						Lease:       leasesD[rng.IntN(2)],
						TTL:         ttls[rng.IntN(2)],
					}
					step += fmt.Sprintf(" claim %+v", req)
					// A memory store claim may sweep the expired records
					// sharing its shard (shards are chosen by a per-process
					// hash seed, so whether k0-k2 share one changes from
					// run to run); Postgres keeps them until Cleanup. Both
					// forget what has expired at this instant first, so the
					// claim meets the same records on both sides.
					mn, merr := mem.Cleanup(ctx)
					pn, perr := pg.Cleanup(ctx)
					if merr != nil || perr != nil || mn != pn {
						t.Fatalf("%s: cleanup before it: memory %d %v, pg %d %v", step, mn, merr, pn, perr)
					}
					mr, merr := mem.Claim(ctx, req)
					pr, perr := pg.Claim(ctx, req)
					mr.Result.Value = nil
					if diff := cmp.Diff(errClass(merr), errClass(perr)); diff != "" {
						t.Fatalf("%s: error (-memory +pg):\n%s", step, diff)
					}
					if diff := cmp.Diff(mr, pr, timeEqual); diff != "" {
						t.Fatalf("%s: result (-memory +pg):\n%s", step, diff)
					}
					if mr.Status == idemstore.ClaimAcquired || mr.Status == idemstore.ClaimTakenOver {
						leases = append(leases, idemstore.Lease{Key: req.Key, Owner: req.Owner, Fence: mr.Fence, Duration: req.Lease, TTL: req.TTL})
					}
				case op < 8 && len(leases) > 0:
					l := leases[rng.IntN(len(leases))]
					var merr, perr error
					switch op {
					case 4:
						step += " heartbeat"
						merr, perr = mem.Heartbeat(ctx, l), pg.Heartbeat(ctx, l)
					case 5:
						d := datas[rng.IntN(len(datas))]
						step += fmt.Sprintf(" complete %q", d)
						merr, perr = mem.Complete(ctx, l, idemstore.Result{Data: d}), pg.Complete(ctx, l, idemstore.Result{Data: d})
					case 6:
						step += " fail"
						d := []byte(`{"message":"boom"}`)
						merr, perr = mem.Fail(ctx, l, idemstore.Result{Data: d}), pg.Fail(ctx, l, idemstore.Result{Data: d})
					case 7:
						step += " release"
						merr, perr = mem.Release(ctx, l), pg.Release(ctx, l)
					}
					step += fmt.Sprintf(" %+v", l)
					if diff := cmp.Diff(errClass(merr), errClass(perr)); diff != "" {
						t.Fatalf("%s: (-memory +pg):\n%s", step, diff)
					}
				case op == 8:
					k := keys[rng.IntN(len(keys))]
					step += " get " + k
					mrec, merr := mem.Get(ctx, k)
					prec, perr := pg.Get(ctx, k)
					if diff := cmp.Diff(errClass(merr), errClass(perr)); diff != "" {
						t.Fatalf("%s: error (-memory +pg):\n%s", step, diff)
					}
					if diff := cmp.Diff(mrec, prec, timeEqual); diff != "" {
						t.Fatalf("%s: record (-memory +pg):\n%s", step, diff)
					}
				case op == 9 && rng.IntN(4) == 0:
					k := keys[rng.IntN(len(keys))]
					step += " delete " + k
					merr, perr := mem.Delete(ctx, k), pg.Delete(ctx, k)
					if diff := cmp.Diff(errClass(merr), errClass(perr)); diff != "" {
						t.Fatalf("%s: (-memory +pg):\n%s", step, diff)
					}
				case op == 10:
					step += " cleanup"
					mn, merr := mem.Cleanup(ctx)
					pn, perr := pg.Cleanup(ctx)
					if merr != nil || perr != nil || mn != pn {
						t.Fatalf("%s: memory %d %v, pg %d %v", step, mn, merr, pn, perr)
					}
				default:
					clock.Advance([]time.Duration{0, 50 * time.Millisecond, 150 * time.Millisecond,
						600 * time.Millisecond, 2 * time.Second, 6 * time.Second}[rng.IntN(6)])
				}
			}
		})
	}
}
