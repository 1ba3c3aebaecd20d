package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TestReplicaAcksOptions: WithReplicaAcks is refused where WAIT could not
// do its job.
func TestReplicaAcksOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		rdb  redis.UniversalClient
		n    int
		d    time.Duration
		want string // "" accepts
	}{
		{"client", redis.NewClient(&redis.Options{}), 1, time.Second, ""},
		{"cluster", redis.NewClusterClient(&redis.ClusterOptions{}), 2, time.Second, ""},
		{"off", redis.NewRing(&redis.RingOptions{}), 0, 0, ""},
		{"ring", redis.NewRing(&redis.RingOptions{}), 1, time.Second, "needs a *redis.Client or *redis.ClusterClient"},
		{"negative n", redis.NewClient(&redis.Options{}), -1, time.Second, "want n > 0"},
		{"no timeout", redis.NewClient(&redis.Options{}), 1, 0, "want n > 0 and a positive timeout"},
		{"default read timeout", redis.NewClient(&redis.Options{}), 1, time.Minute, "not shorter than the client's ReadTimeout"},
		{"read timeout", redis.NewClient(&redis.Options{ReadTimeout: 100 * time.Millisecond}), 1, 200 * time.Millisecond, "ReadTimeout 100ms"},
		{"no read timeout", redis.NewClient(&redis.Options{ReadTimeout: -1}), 1, time.Minute, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer tc.rdb.Close()
			s, err := build(tc.rdb, []Option{WithReplicaAcks(tc.n, tc.d)})
			if s != nil {
				s.Close()
			}
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("build = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestClockClaimScript: WithClockFences's script is the claim script with
// only the fence changed (a claim script edit that renames the line would
// otherwise silently turn the option off).
func TestClockClaimScript(t *testing.T) {
	if clockClaimSrc == claimSrc || strings.Count(clockClaimSrc, "math.max(fence + 1, now)") != 1 {
		t.Fatal("clockClaimSrc does not replace the claim script's fence increment")
	}
}

// TestReplicaAcksMissing: on a Redis without replicas no acknowledgement
// ever comes. Through the Guard the function does not run and the claim is
// given back; fenced writes fail with ErrNotReplicated; a completion is
// retried until its ctx ends. The same calls succeed without the option,
// and with WithClockFences fences are server times that keep increasing.
func TestReplicaAcksMissing(t *testing.T) {
	rdb := standalone(t)
	ctx := context.Background()
	if n, err := rdb.Do(ctx, "wait", 1, 1).Int64(); err != nil || n != 0 {
		if err == nil {
			err = fmt.Errorf("WAIT 1 1 = %d: it has %d replica(s)", n, n)
		}
		testenv.Need(t, "a Redis without replicas at "+rdb.Options().Addr, "set IDEM_REDIS_ADDR to a standalone Redis without replicas (the machine's 127.0.0.1:6379 has none)", err)
	}
	s := newStore(t, rdb, WithReplicaAcks(1, 50*time.Millisecond), WithClockFences())
	spec := &idem.Spec{Name: "acks.f", Lease: 5 * time.Second}
	var runs atomic.Int64
	c := idem.NewGuard(s).Begin(spec, "k")
	_, err := idem.Do(ctx, c, func(context.Context) (string, error) { runs.Add(1); return "v", nil })
	if !errors.Is(err, ErrNotReplicated) || !errors.Is(err, idem.ErrStoreUnavailable) || runs.Load() != 0 {
		t.Fatalf("Do = %v after %d runs, want ErrNotReplicated and no run", err, runs.Load())
	}
	// Given back: released at once, not held for the lease.
	rec, err := s.Get(ctx, spec.Name+":k")
	if err == nil && rec.State != idemstore.StateReleased {
		t.Fatalf("the unacknowledged claim is %s, want released", rec.State)
	}

	// The writes, on a claim made without the option.
	plain := newStore(t, rdb, WithKeyPrefix(s.prefix))
	l := idemstore.Lease{Key: "w", Owner: idemstore.Token{7}, Duration: 5 * time.Second, TTL: time.Minute}
	res, err := plain.Claim(ctx, idemstore.ClaimRequest{Key: l.Key, Owner: l.Owner, Lease: l.Duration, TTL: l.TTL})
	if err != nil {
		t.Fatal(err)
	}
	l.Fence = res.Fence
	if err := s.Heartbeat(ctx, l); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("Heartbeat = %v, want ErrNotReplicated", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = s.Complete(cctx, l, idemstore.Result{Data: []byte("r")})
	if !errors.Is(err, ErrNotReplicated) || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < 250*time.Millisecond {
		t.Fatalf("Complete = %v after %v, want ErrNotReplicated retried until the ctx's deadline", err, time.Since(start))
	}
	// The completion is on the primary (it is the unacknowledged part that
	// failed): a replay there sees it.
	if rec, err := plain.Get(ctx, "w"); err != nil || rec.State != idemstore.StateCompleted {
		t.Fatalf("record after the unacknowledged completion: %+v, %v", rec, err)
	}

	// Clock fences: the server's µs, and above the previous one.
	clock := newStore(t, rdb, WithClockFences())
	var last uint64
	before := time.Now().Add(-time.Minute).UnixMicro()
	for i := range 3 {
		res, err := clock.Claim(ctx, idemstore.ClaimRequest{Key: "f", Owner: idemstore.Token{byte(i + 1)}, Lease: time.Microsecond, TTL: time.Minute})
		if err != nil || (res.Status != idemstore.ClaimAcquired && res.Status != idemstore.ClaimTakenOver) {
			t.Fatalf("claim %d = %+v, %v", i, res, err)
		}
		if res.Fence <= last || int64(res.Fence) < before {
			t.Fatalf("claim %d: fence %d after %d, want a server time in µs above it", i, res.Fence, last)
		}
		last = res.Fence
		time.Sleep(time.Millisecond)
	}
}

// TestReplicaAcksCluster: on the failover Cluster (three masters with a
// replica each), acknowledged claims and completions of keys in every
// master's slots succeed: the confirmation and WAIT reach the master that
// owns each key (a WAIT sent elsewhere would count another master's
// replicas, and the confirming script would be refused with MOVED).
func TestReplicaAcksCluster(t *testing.T) {
	rdb := failoverCluster(t)
	s := newStore(t, rdb, WithReplicaAcks(1, time.Second), WithClockFences())
	ctx := context.Background()
	masters := map[string]bool{}
	for i := range 30 {
		key := "k" + strings.Repeat("x", i)
		node, err := rdb.MasterForKey(ctx, s.RecordKey(key))
		if err != nil {
			t.Fatal(err)
		}
		masters[node.Options().Addr] = true
		l := idemstore.Lease{Key: key, Owner: idemstore.Token{byte(i + 1)}, Duration: 5 * time.Second, TTL: time.Minute}
		res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: l.Owner, Lease: l.Duration, TTL: l.TTL})
		if err != nil || res.Status != idemstore.ClaimAcquired {
			t.Fatalf("claim %s = %+v, %v", key, res, err)
		}
		l.Fence = res.Fence
		if err := s.Heartbeat(ctx, l); err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(ctx, l, idemstore.Result{Data: []byte("r")}); err != nil {
			t.Fatal(err)
		}
	}
	if len(masters) != 3 {
		t.Fatalf("keys reached masters %v, want all three", masters)
	}
}

// failoverCluster starts (or checks) the Cluster with replicas of
// scripts/redis-failover.sh and returns a client, or skips (fails under
// CI=true) when it cannot start.
func failoverCluster(t *testing.T) *redis.ClusterClient {
	t.Helper()
	if err := failoverScript("start", "cluster"); err != nil {
		testenv.Need(t, "the Redis Cluster with replicas on 7221-7226", "run `bash scripts/redis-failover.sh start` (or `make services`)", err)
	}
	var addrs []string
	for p := 7221; p <= 7226; p++ {
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(p))
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, DialTimeout: time.Second, ReadTimeout: 3 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}
