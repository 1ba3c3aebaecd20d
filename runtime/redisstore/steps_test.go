package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

// keysOf lists the Redis keys under the store's prefix on every node.
func keysOf(t *testing.T, rdb redis.UniversalClient, s *Store) []string {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var keys []string
	err := scanPrefix(ctx, rdb, s.prefix, func(_ context.Context, _ *redis.Client, key string) {
		mu.Lock()
		keys = append(keys, key)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestStepsLayout: a call's steps live in its record's value (version 4),
// so a call with steps is still one Redis key, in one slot of a Cluster,
// also for an ordered function's key ("=" form, claimed with its order
// key after the release). A heartbeat, a release
// and ForceRelease keep them; a completion replaces them with its result;
// Get never reports them as a result.
func TestStepsLayout(t *testing.T) {
	for name, rdb := range map[string]redis.UniversalClient{"standalone": standalone(t), "cluster": cluster(t)} {
		for _, key := range []string{"plain", "app.Handle:v0:{e1}:call"} {
			t.Run(name+"/"+key, func(t *testing.T) {
				ctx := context.Background()
				s := newStore(t, rdb)
				l := idemstore.Lease{Key: key, Owner: idemstore.Token{1}, Duration: time.Minute, TTL: time.Hour}
				res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: l.Owner, Lease: l.Duration, TTL: l.TTL})
				if err != nil || res.Status != idemstore.ClaimAcquired {
					t.Fatalf("claim = %+v, %v", res, err)
				}
				l.Fence = res.Fence
				for _, st := range []struct{ name, data string }{{"charge", "ch_1"}, {"email", ""}, {"a\x00b", "\x00\xff"}} {
					if err := s.SaveStep(ctx, l, st.name, []byte(st.data)); err != nil {
						t.Fatal(err)
					}
				}
				want := map[string][]byte{"charge": []byte("ch_1"), "email": {}, "a\x00b": []byte("\x00\xff")}
				rk := s.RecordKey(key)
				check := func(when string, wantVer byte, wantSteps map[string][]byte) {
					t.Helper()
					orderKey := s.RecordKey("app.Handle:v0:{e1}")
					keys := keysOf(t, rdb, s)
					if !slices.Contains(keys, rk) {
						t.Fatalf("%s: no record key %q among %q", when, rk, keys)
					}
					for _, k := range keys {
						if k != rk && k != orderKey {
							t.Fatalf("%s: key %q besides the record key %q", when, k, rk)
						}
					}
					v, err := rdb.Get(ctx, rk).Result()
					if err != nil {
						t.Fatal(err)
					}
					if v[1] != wantVer {
						t.Fatalf("%s: record version %d, want %d", when, v[1], wantVer)
					}
					var got map[string][]byte
					if v[1] == stepsVersion {
						if got, err = decodeSteps(key, v[headerLenV3:]); err != nil {
							t.Fatal(err)
						}
					}
					if diff := cmp.Diff(wantSteps, got); diff != "" {
						t.Fatalf("%s: steps (-want +got):\n%s", when, diff)
					}
					ttl, err := rdb.PTTL(ctx, rk).Result()
					if err != nil || ttl <= 0 {
						t.Fatalf("%s: PTTL %v, %v: the record lost its expiry", when, ttl, err)
					}
					if r, err := s.Get(ctx, key); err != nil || (r.State != idemstore.StateCompleted && r.Result != nil) {
						t.Fatalf("%s: Get = %+v, %v; want the record without its steps as a result", when, r, err)
					}
					listed := 0
					if err := s.List(ctx, key, func(idemstore.Record) error { listed++; return nil }); err != nil || listed != 1 {
						t.Fatalf("%s: List found %d records, %v", when, listed, err)
					}
				}
				check("after SaveStep", stepsVersion, want)
				if err := s.Heartbeat(ctx, l); err != nil {
					t.Fatal(err)
				}
				check("after Heartbeat", stepsVersion, want)
				if err := s.Release(ctx, l); err != nil {
					t.Fatal(err)
				}
				check("after Release", stepsVersion, want)
				l.Owner = idemstore.Token{2}
				req := idemstore.ClaimRequest{Key: key, Owner: l.Owner, Lease: l.Duration, TTL: l.TTL}
				if hasTag(key) {
					// an ordered claim: the claim script with the order key
					req.Order = idemstore.OrderClaim{Key: "app.Handle:v0:{e1}", At: time.Now()}
				}
				res, err = s.Claim(ctx, req)
				if err != nil || res.Status != idemstore.ClaimAcquired || res.Fence != 2 {
					t.Fatalf("claim after release = %+v, %v", res, err)
				}
				if diff := cmp.Diff(want, res.Steps); diff != "" {
					t.Fatalf("steps of the claim after release (-want +got):\n%s", diff)
				}
				if _, err := s.ForceRelease(ctx, key); err != nil {
					t.Fatal(err)
				}
				check("after ForceRelease", stepsVersion, want)
				l.Owner = idemstore.Token{3}
				res, err = s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: l.Owner, Lease: l.Duration, TTL: l.TTL})
				if err != nil || res.Status != idemstore.ClaimAcquired || len(res.Steps) != 3 {
					t.Fatalf("claim after ForceRelease = %+v, %v", res, err)
				}
				l.Fence = res.Fence
				if err := s.Complete(ctx, l, idemstore.Result{Data: []byte("done")}); err != nil {
					t.Fatal(err)
				}
				check("after Complete", recordVersion, nil)
				if r, err := s.Get(ctx, key); err != nil || string(r.Result) != "done" {
					t.Fatalf("Get after Complete = %+v, %v", r, err)
				}
			})
		}
	}
}

// TestStepStaleOwnerCluster: through Guards on a Cluster, an owner paused
// past its lease is taken over; the successor replays the steps the first
// owner recorded, and the first owner's next step is refused with
// ErrLeaseLost (its ctx canceled with that cause) and changes nothing.
func TestStepStaleOwnerCluster(t *testing.T) {
	rdb := cluster(t)
	s := newStore(t, rdb)
	ctx := context.Background()
	spec := &idem.Spec{Name: "steps.stale", Lease: 300 * time.Millisecond, TTL: time.Minute}
	var ran [2]atomic.Int32
	paused, resume := make(chan struct{}), make(chan struct{})
	var staleErr, staleCause error
	body := func(first bool) func(ctx context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			a, err := idem.Step(ctx, "charge", func(context.Context) (string, error) {
				ran[0].Add(1)
				return "ch_1", nil
			})
			if err != nil {
				return "", err
			}
			if first {
				close(paused)
				<-resume
			}
			b, err := idem.Step(ctx, "email", func(context.Context) (string, error) {
				ran[1].Add(1)
				return fmt.Sprintf("em_%d", ran[1].Load()), nil
			})
			if first {
				staleErr, staleCause = err, context.Cause(ctx)
			}
			if err != nil {
				return "", err
			}
			return a + "/" + b, nil
		}
	}
	call := func(g *idem.Guard, first bool) (string, error) {
		c := g.Begin(spec, "order-1")
		return idem.Do(ctx, c, body(first))
	}
	// The first owner's heartbeats do not reach the store: it stands for
	// a process paused past its lease.
	stopped := idem.NewGuard(noHeartbeat{s})
	done := make(chan error, 1)
	go func() { _, err := call(stopped, true); done <- err }()
	<-paused
	time.Sleep(spec.Lease + 100*time.Millisecond)
	got, err := call(idem.NewGuard(s), false)
	if err != nil || got != "ch_1/em_1" {
		t.Fatalf("successor = %q, %v", got, err)
	}
	close(resume)
	if err := <-done; !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("stale owner's call = %v, want ErrLeaseLost", err)
	}
	if !errors.Is(staleErr, idem.ErrLeaseLost) || !errors.Is(staleCause, idem.ErrLeaseLost) {
		t.Fatalf("stale owner's step = %v (ctx cause %v), want ErrLeaseLost", staleErr, staleCause)
	}
	if ran[0].Load() != 1 || ran[1].Load() != 2 {
		t.Fatalf("steps ran %d and %d times, want 1 (replayed) and 2 (the stale owner's run is not recorded)", ran[0].Load(), ran[1].Load())
	}
	if got, err := call(idem.NewGuard(s), false); err != nil || got != "ch_1/em_1" {
		t.Fatalf("replay = %q, %v", got, err)
	}
}

// noHeartbeat is the store whose heartbeats are lost on the way (and
// reported done): its owner keeps running past its lease.
type noHeartbeat struct{ *Store }

func (noHeartbeat) Heartbeat(context.Context, idemstore.Lease) error { return nil }

// TestStepTooLarge: a step that would make its record larger than the
// store writes is refused with idem.ErrResultTooLarge, whether its own
// size tells (before anything is sent) or the steps already recorded do
// (the script), and the record keeps its earlier steps.
func TestStepTooLarge(t *testing.T) {
	rdb := standalone(t)
	s := newStore(t, rdb)
	s.maxRecord = 1000
	ctx := context.Background()
	l := idemtest.CheckStepTooLarge(t, s, "big", idemstore.Token{1}, "1117 bytes")
	if _, err := s.ForceRelease(ctx, l.Key); err != nil {
		t.Fatal(err)
	}
	res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: l.Key, Owner: idemstore.Token{2}, Lease: l.Duration, TTL: l.TTL})
	if err != nil || len(res.Steps) != 1 || len(res.Steps["a"]) != 500 {
		t.Fatalf("claim = %v steps, %v; want step a of 500 bytes", len(res.Steps), err)
	}
}

// TestStepsRetriedClaim: a claim that took over a record with steps and is
// run again by the client's retry (same owner and op id) returns the
// steps again.
func TestStepsRetriedClaim(t *testing.T) {
	rdb := standalone(t)
	s := newStore(t, rdb)
	ctx := context.Background()
	l := idemstore.Lease{Key: "retry", Owner: idemstore.Token{1}, Duration: 20 * time.Millisecond, TTL: time.Hour}
	res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: l.Key, Owner: l.Owner, Lease: l.Duration, TTL: l.TTL})
	if err != nil {
		t.Fatal(err)
	}
	l.Fence = res.Fence
	if err := s.SaveStep(ctx, l, "charge", []byte("ch_1")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	rk := s.RecordKey(l.Key)
	op := s.op()
	owner, fp := idemstore.Token{2}, idemstore.Fingerprint{}
	for i, want := range []int64{int64(idemstore.ClaimTakenOver), int64(idemstore.ClaimAcquired)} {
		res, err := s.scripts.claim.Run(ctx, rdb, []string{rk}, owner[:], fp[:], micro(time.Minute), micro(time.Hour), channelOf(rk), op).Slice()
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 4 || res[0] != want || res[3] != "\x00\x00\x00\x06charge\x00\x00\x00\x04ch_1" {
			t.Fatalf("claim run %d = %q, want status %d with the steps", i, res, want)
		}
	}
}

// TestStepsConcurrentPipelined: many calls recording steps at once go
// through the store's pipeline together with their heartbeats, claims and
// completions. Each call dies (panics, which releases its key) after two
// steps; the retries, again all at once, resume through the claim script
// in the pipeline: every step runs once and every call completes.
func TestStepsConcurrentPipelined(t *testing.T) {
	for name, rdb := range map[string]redis.UniversalClient{"standalone": standalone(t), "cluster": cluster(t)} {
		t.Run(name, func(t *testing.T) {
			s := newStore(t, rdb)
			g := idem.NewGuard(s)
			// Heartbeats every 100ms, among the steps (60ms each). A
			// shorter lease is lost on a loaded machine: the Guard stops a
			// function whose heartbeats all came late for one lease.
			spec := &idem.Spec{Name: "steps.concurrent", Lease: 300 * time.Millisecond, TTL: time.Minute}
			const calls = 64
			var ran [calls][3]atomic.Int32
			crash := errors.New("crash")
			round := func(die bool) {
				var wg sync.WaitGroup
				errs := make(chan error, calls)
				for i := range calls {
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer func() {
							if p := recover(); p != nil && p != crash {
								errs <- fmt.Errorf("call %d panicked: %v", i, p)
							}
						}()
						c := g.Begin(spec, fmt.Sprint("k", i))
						got, err := idem.Do(context.Background(), c, func(ctx context.Context) (int, error) {
							sum := 0
							for j := range 3 {
								if die && j == 2 {
									panic(crash)
								}
								v, err := idem.Step(ctx, fmt.Sprint("s", j), func(context.Context) (int, error) {
									ran[i][j].Add(1)
									time.Sleep(60 * time.Millisecond)
									return i*10 + j, nil
								})
								if err != nil {
									return 0, err
								}
								sum += v
							}
							return sum, nil
						})
						if err == nil && got != 30*i+3 {
							err = fmt.Errorf("call %d = %d, want %d", i, got, 30*i+3)
						}
						if err != nil {
							errs <- err
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
			}
			round(true)
			round(false)
			for i := range calls {
				for j := range 3 {
					if n := ran[i][j].Load(); n != 1 {
						t.Errorf("call %d: step %d ran %d times, want 1", i, j, n)
					}
				}
			}
		})
	}
}

// TestStepsReplicaAcks: with WithReplicaAcks on the failover Cluster a
// step returns once the key's master's replica has it (read there); on a
// Redis without replicas it is retried like a completion until its ctx
// ends and fails with ErrNotReplicated.
func TestStepsReplicaAcks(t *testing.T) {
	ctx := context.Background()
	t.Run("cluster", func(t *testing.T) {
		rdb := failoverCluster(t)
		s := newStore(t, rdb, WithReplicaAcks(1, time.Second), WithClockFences())
		for i := range 6 {
			key := "k" + strings.Repeat("x", i)
			l := idemstore.Lease{Key: key, Owner: idemstore.Token{1}, Duration: 5 * time.Second, TTL: time.Minute}
			res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: l.Owner, Lease: l.Duration, TTL: l.TTL})
			if err != nil || res.Status != idemstore.ClaimAcquired {
				t.Fatalf("claim %s = %+v, %v", key, res, err)
			}
			l.Fence = res.Fence
			if err := s.SaveStep(ctx, l, "charge", []byte("ch_"+key)); err != nil {
				t.Fatal(err)
			}
			// The replica acknowledged the step: it holds it.
			var v string
			err = rdb.ForEachSlave(ctx, func(ctx context.Context, c *redis.Client) error {
				pipe := c.Pipeline()
				pipe.ReadOnly(ctx)
				get := pipe.Get(ctx, s.RecordKey(key))
				_, _ = pipe.Exec(ctx)
				if got, err := get.Result(); err == nil && strings.Contains(got, "ch_"+key) {
					v = got
				}
				return nil
			})
			if err != nil || v == "" || v[1] != stepsVersion {
				t.Fatalf("no replica holds the step of %s (%v)", key, err)
			}
		}
	})
	t.Run("no replicas", func(t *testing.T) {
		rdb := standalone(t)
		if n, err := rdb.Do(ctx, "wait", 1, 1).Int64(); err != nil || n != 0 {
			testenv.Need(t, "a standalone Redis without replicas", "point IDEM_REDIS_ADDR at one",
				fmt.Errorf("WAIT answered %d replicas (%v)", n, err))
		}
		s := newStore(t, rdb, WithReplicaAcks(1, 50*time.Millisecond))
		plain := newStore(t, rdb, WithKeyPrefix(s.prefix))
		l := idemstore.Lease{Key: "k", Owner: idemstore.Token{1}, Duration: time.Minute, TTL: time.Hour}
		res, err := plain.Claim(ctx, idemstore.ClaimRequest{Key: l.Key, Owner: l.Owner, Lease: l.Duration, TTL: l.TTL})
		if err != nil {
			t.Fatal(err)
		}
		l.Fence = res.Fence
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		err = s.SaveStep(cctx, l, "charge", []byte("ch_1"))
		if !errors.Is(err, ErrNotReplicated) || !errors.Is(err, idem.ErrStoreUnavailable) || time.Since(start) < 250*time.Millisecond {
			t.Fatalf("SaveStep = %v after %v, want ErrNotReplicated retried until the ctx's deadline", err, time.Since(start))
		}
	})
}

// TestFailoverSentinelSteps: with WithReplicaAcks, steps are as durable
// as completions across a Sentinel failover. A step acknowledged before
// the primary dies is on the promoted replica; a step saved while the
// replica is cut off is not acknowledged, is retried across the failover,
// and is written again on the promoted primary, which had the claim
// without it; the call's next claim (after its release) resumes both.
func TestFailoverSentinelSteps(t *testing.T) {
	rdb := settledSentinel(t)
	ctx := context.Background()
	acked := newStore(t, rdb, WithReplicaAcks(1, 500*time.Millisecond), WithClockFences())
	l := idemstore.Lease{Key: "steps", Owner: idemstore.Token{1}, Duration: time.Minute, TTL: time.Hour}
	res, err := acked.Claim(ctx, idemstore.ClaimRequest{Key: l.Key, Owner: l.Owner, Lease: l.Duration, TTL: l.TTL})
	if err != nil || res.Status != idemstore.ClaimAcquired {
		t.Fatalf("claim = %+v, %v", res, err)
	}
	l.Fence = res.Fence
	if err := acked.SaveStep(ctx, l, "charge", []byte("ch_1")); err != nil {
		t.Fatal(err)
	}

	n := currentNodes(t, ctx)
	isolateReplica(t, ctx, n)
	saved := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		saved <- acked.SaveStep(sctx, l, "email", []byte("em_1"))
	}()
	select {
	case err := <-saved:
		t.Fatalf("SaveStep returned %v while no replica could acknowledge it", err)
	case <-time.After(time.Second):
	}
	promote(t, ctx, n)
	if err := <-saved; err != nil {
		t.Fatalf("SaveStep across the failover = %v, want it written again on the promoted primary", err)
	}
	if err := acked.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	res, err = acked.Claim(ctx, idemstore.ClaimRequest{Key: l.Key, Owner: idemstore.Token{2}, Lease: l.Duration, TTL: l.TTL})
	if err != nil || res.Status != idemstore.ClaimAcquired {
		t.Fatalf("claim after the failover = %+v, %v", res, err)
	}
	want := map[string][]byte{"charge": []byte("ch_1"), "email": []byte("em_1")}
	if diff := cmp.Diff(want, res.Steps); diff != "" {
		t.Fatalf("steps after the failover (-want +got):\n%s", diff)
	}
}
