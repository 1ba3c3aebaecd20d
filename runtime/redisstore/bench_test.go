package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

// Benchmarks measure the store through a Guard (idem.Do, as generated code
// calls it) and, in the same run, on the same client and interleaved with
// it, the raw go-redis round trip it is compared with. ns/op is the
// store's time per operation at the benchmark's concurrency, raw-ns/op the
// baseline's; x-raw is the store's throughput as a fraction of the raw one.
//
//	go test -run '^$' -bench . -benchtime 2s ./runtime/redisstore/

func benchClient(b *testing.B) *redis.Client {
	return standalone(b, func(o *redis.Options) { o.PoolSize = 64 })
}

// parallel runs op n times on c goroutines and returns the elapsed time.
func parallel(n, c int, op func(i int)) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for g := 0; g < c; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				op(i)
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// versus runs n iterations of raw and of store on callers goroutines and
// returns each side's time per operation at that concurrency. Machine load
// here swings a lot (2 shared cores), so the two sides are interleaved:
// one caller alternates a raw and a store operation (idemtest.Interleave);
// many callers run the two sides in alternating phases of n/16 operations
// each. (Mixing the sides inside one phase would let their queueing
// average out and hide the store's extra server time.)
func versus(n, callers int, raw, store func(i int)) (rawPerOp, storePerOp time.Duration) {
	if callers == 1 {
		return idemtest.Interleave(1, n, raw, store)
	}
	const phases = 16
	var rawTime, storeTime time.Duration
	for done, r := 0, 0; done < n; r++ {
		m := min(max(n/phases, 1), n-done)
		base := done
		runRaw := func() { rawTime += parallel(m, callers, func(i int) { raw(base + i) }) }
		runStore := func() { storeTime += parallel(m, callers, func(i int) { store(base + i) }) }
		if r%2 == 0 {
			runRaw()
			runStore()
		} else {
			runStore()
			runRaw()
		}
		done += m
	}
	return rawTime / time.Duration(n), storeTime / time.Duration(n)
}

func report(b *testing.B, store, raw time.Duration) {
	b.ReportMetric(float64(store.Nanoseconds()), "ns/op")
	b.ReportMetric(float64(raw.Nanoseconds()), "raw-ns/op")
	b.ReportMetric(float64(raw)/float64(store), "x-raw")
}

type invoice struct {
	ID     string `json:"id"`
	Amount int64  `json:"amount"`
	Note   string `json:"note"`
}

// BenchmarkReplay replays a value result and, at 32 callers, a pointer
// result; every replay decodes its result. The deadline variants call with a ctx that has a
// deadline, on the default client (ContextTimeoutEnabled false): the
// store then watches each call in a goroutine of its own (Store.bounded).
func BenchmarkReplay(b *testing.B) {
	for _, tc := range []struct {
		name     string
		callers  int
		pointer  bool
		deadline bool
		noPipe   bool
	}{
		{"callers=1", 1, false, false, false}, {"callers=32", 32, false, false, false}, {"callers=32/pointer-result", 32, true, false, false},
		{"callers=1/ctx-deadline", 1, false, true, false}, {"callers=32/ctx-deadline", 32, false, true, false},
		{"callers=1/pipelining=off", 1, false, false, true}, {"callers=32/pipelining=off", 32, false, false, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			rdb := benchClient(b)
			s := newStore(b, rdb, WithPipelining(!tc.noPipe))
			g := idem.NewGuard(s)
			spec := &idem.Spec{Name: "bench.replay", TTL: time.Hour}
			ctx := context.Background()
			if tc.deadline {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Hour)
				defer cancel()
			}
			first := invoice{ID: "inv-1", Amount: 4200, Note: "first call"}
			do := func() (invoice, error) {
				c := g.Begin(spec, "order-1")
				if tc.pointer {
					v, err := idem.Do(ctx, c, func(context.Context) (*invoice, error) { return &first, nil })
					if v == nil {
						return invoice{}, err
					}
					return *v, err
				}
				return idem.Do(ctx, c, func(context.Context) (invoice, error) { return first, nil })
			}
			if _, err := do(); err != nil {
				b.Fatal(err)
			}
			c := g.Begin(spec, "order-1")
			key, _ := c.StoreKey()
			rk := s.RecordKey(key)
			b.ResetTimer()
			// Baseline: GET of the very record (same value size).
			raw, store := versus(b.N, tc.callers, func(int) {
				if err := rdb.Get(ctx, rk).Err(); err != nil {
					b.Error(err)
				}
			}, func(int) {
				if v, err := do(); err != nil || v.ID != "inv-1" {
					b.Error(v, err)
				}
			})
			b.StopTimer()
			report(b, store, raw)
		})
	}
}

// BenchmarkFirstExecution: claim, run and complete new keys, against a raw
// SET NX of a new key. pipelining=off is the store without its pipe
// (every call its own round trip), maxFlushers=1 the pipe with one
// pipeline in flight at a time, both measured in the same run.
func BenchmarkFirstExecution(b *testing.B) {
	for _, tc := range []struct {
		callers  int
		pipe     bool
		flushers int // 0: maxFlushers
	}{{1, true, 0}, {4, true, 0}, {4, true, 1}, {32, true, 0}, {32, true, 1}, {1, false, 0}, {32, false, 0}} {
		callers := tc.callers
		name := "callers=" + strconv.Itoa(callers)
		if !tc.pipe {
			name += "/pipelining=off"
		}
		if tc.flushers != 0 {
			name += "/maxFlushers=" + strconv.Itoa(tc.flushers)
		}
		b.Run(name, func(b *testing.B) {
			rdb := benchClient(b)
			s := newStore(b, rdb, WithPipelining(tc.pipe))
			if tc.flushers != 0 {
				s.pipe.maxFlushers = tc.flushers
			}
			g := idem.NewGuard(s)
			spec := &idem.Spec{Name: "bench.first", TTL: time.Minute}
			ctx := context.Background()
			do := func(id string) (invoice, error) {
				c := g.Begin(spec, id)
				return idem.Do(ctx, c, func(context.Context) (invoice, error) {
					return invoice{ID: id, Amount: 4200, Note: "first call"}, nil
				})
			}
			if _, err := do("warm-up"); err != nil {
				b.Fatal(err)
			}
			run := strconv.FormatInt(time.Now().UnixNano(), 36)
			prefix := s.prefix
			b.ResetTimer()
			// Baseline: SET NX with a TTL on a new key, one round trip.
			raw, store := versus(b.N, callers, func(i int) {
				if err := rdb.SetNX(ctx, prefix+"raw:"+run+":"+strconv.Itoa(i), "x", time.Minute).Err(); err != nil {
					b.Error(err)
				}
			}, func(i int) {
				if _, err := do(run + ":" + strconv.Itoa(i)); err != nil {
					b.Error(err)
				}
			})
			b.StopTimer()
			report(b, store, raw)
		})
	}
}

// BenchmarkWaitWakeup: how long after an owner starts its Complete a waiter
// (another store instance, as in another process) returns from Wait.
func BenchmarkWaitWakeup(b *testing.B) {
	rdb := benchClient(b)
	owner := newStore(b, rdb)
	waiterRdb := standalone(b)
	waiter, err := New(context.Background(), waiterRdb, WithKeyPrefix(owner.prefix), WithLogger(quietLogger()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { waiter.Close() })
	ctx := context.Background()
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	begin := func(i int) (string, func() error) {
		key := "wake:" + run + ":" + strconv.Itoa(i)
		req := idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{1}, Lease: 10 * time.Second, TTL: time.Minute}
		res, err := owner.Claim(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		return key, func() error {
			return owner.Complete(ctx, idemstore.Lease{Key: key, Owner: req.Owner, Fence: res.Fence, TTL: time.Minute}, idemstore.Result{Data: []byte("1")})
		}
	}
	wait := func(key string) error { return waiter.Wait(ctx, key) }
	lat, _ := idemtest.WakeupTimes(b, begin, wait, func(key string) { waitListening(waiter, key) })
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	b.ReportMetric(float64(sum.Nanoseconds())/float64(len(lat)), "ns/op")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// waitListening returns once key's waiter is subscribed and has had time
// to read the record (the benchmark measures the wake-up, not the start).
func waitListening(s *Store, key string) {
	ch := channelOf(s.RecordKey(key))
	for {
		s.hub.mu.Lock()
		sub := s.hub.subs[ch]
		ok := sub != nil && sub.confirmed
		s.hub.mu.Unlock()
		if ok {
			time.Sleep(2 * time.Millisecond)
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// BenchmarkFirstExecutionSteps takes a first execution apart at one
// caller: per iteration, on new keys and in turn, a raw SET NX (the
// baseline), a raw SET NX GET of a record-sized value (what a claim
// sends), Store.Claim of a free key, Store.Complete of that claim, and the
// whole first execution through the Guard. Each step's mean latency is
// reported, with its ratio to the raw SET NX (x-setnx).
//
//	go test -run '^$' -bench FirstExecutionSteps -benchtime 3000x -count 3 ./runtime/redisstore/
func BenchmarkFirstExecutionSteps(b *testing.B) {
	rdb := benchClient(b)
	s := newStore(b, rdb)
	g := idem.NewGuard(s)
	spec := &idem.Spec{Name: "bench.steps", TTL: time.Minute}
	ctx := context.Background()
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	value := make([]byte, headerLen)
	data := []byte(`{"id":"inv-1","amount":4200,"note":"first call"}`)
	names := []string{"setnx", "setnx-get", "claim", "complete", "guard-first-execution"}
	var sum [5]time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := run + ":" + strconv.Itoa(i)
		steps := [5]func() error{
			func() error { return rdb.SetNX(ctx, s.prefix+"raw:"+k, "x", time.Minute).Err() },
			func() error {
				err := rdb.Do(ctx, "set", s.prefix+"rawget:"+k, value, "px", 60000, "nx", "get").Err()
				if err == redis.Nil {
					return nil
				}
				return err
			},
			func() error {
				res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "c:" + k, Owner: idemstore.Token{1}, Lease: 30 * time.Second, TTL: time.Minute})
				if err == nil && res.Status != idemstore.ClaimAcquired {
					err = fmt.Errorf("claim %v", res.Status)
				}
				return err
			},
			func() error {
				l := idemstore.Lease{Key: "c:" + k, Owner: idemstore.Token{1}, Fence: 1, Duration: 30 * time.Second, TTL: time.Minute}
				return s.Complete(ctx, l, idemstore.Result{Data: data})
			},
			func() error {
				c := g.Begin(spec, k)
				_, err := idem.Do(ctx, c, func(context.Context) (invoice, error) {
					return invoice{ID: k, Amount: 4200, Note: "first call"}, nil
				})
				return err
			},
		}
		for j, step := range steps {
			t := time.Now()
			if err := step(); err != nil {
				b.Fatal(names[j], err)
			}
			sum[j] += time.Since(t)
		}
	}
	b.StopTimer()
	for j, name := range names {
		b.ReportMetric(float64(sum[j].Microseconds())/float64(b.N), name+"-µs")
		if j > 0 {
			b.ReportMetric(float64(sum[j])/float64(sum[0]), name+"-x-setnx")
		}
	}
}

// BenchmarkReplayServerCPU reads Redis's own accounting (INFO commandstats,
// the server CPU time per command) around N replays of a finished record
// three ways: the store's claim (one SET NX GET), the claim script the SET
// replaced (EVALSHA, which used to serve replays), and a raw GET of the
// record. Other clients' commands of the same kinds would count too: run it
// on a quiet server.
//
//	go test -run '^$' -bench ReplayServerCPU -benchtime 20000x -count 3 ./runtime/redisstore/
func BenchmarkReplayServerCPU(b *testing.B) {
	rdb := benchClient(b)
	s := newStore(b, rdb)
	ctx := context.Background()
	req := idemstore.ClaimRequest{Key: "cpu", Owner: idemstore.Token{1}, Fingerprint: idemstore.Fingerprint{2}, Lease: time.Minute, TTL: time.Hour}
	res, err := s.Claim(ctx, req)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Complete(ctx, idemstore.Lease{Key: req.Key, Owner: req.Owner, Fence: res.Fence, Duration: time.Minute, TTL: time.Hour},
		idemstore.Result{Data: []byte(`{"id":"inv-1","amount":4200,"note":"first call"}`)}); err != nil {
		b.Fatal(err)
	}
	rk := s.RecordKey(req.Key)
	// usec returns the server's total µs and calls so far for a command.
	usec := func(cmd string) (us, calls float64) {
		info, err := rdb.Info(ctx, "commandstats").Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":"); ok {
				for _, f := range strings.Split(rest, ",") {
					k, v, _ := strings.Cut(f, "=")
					n, _ := strconv.ParseFloat(v, 64)
					switch k {
					case "usec":
						us = n
					case "calls":
						calls = n
					}
				}
			}
		}
		return us, calls
	}
	measure := func(cmd string, op func() error) float64 {
		us0, c0 := usec(cmd)
		for range b.N {
			if err := op(); err != nil {
				b.Fatal(cmd, err)
			}
		}
		us1, c1 := usec(cmd)
		return (us1 - us0) / (c1 - c0)
	}
	args := []any{req.Owner[:], req.Fingerprint[:], micro(req.Lease), micro(req.TTL), channelOf(rk), s.op()}
	if err := claimScript.Load(ctx, rdb).Err(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	set := measure("set", func() error {
		res, err := s.Claim(ctx, req)
		if err == nil && res.Status != idemstore.ClaimCompleted {
			err = fmt.Errorf("claim %v", res.Status)
		}
		return err
	})
	script := measure("evalsha", func() error { return claimScript.EvalSha(ctx, rdb, []string{rk}, args...).Err() })
	get := measure("get", func() error { return rdb.Get(ctx, rk).Err() })
	b.StopTimer()
	b.ReportMetric(set, "claim-set-server-µs")
	b.ReportMetric(script, "claim-script-server-µs")
	b.ReportMetric(get, "get-server-µs")
}
