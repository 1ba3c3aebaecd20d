package redisstore

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemstore"

	"github.com/idemgen/idemgen/internal/testenv"
)

// faultEnv is a store reached through a fault proxy, and a second store
// under the same prefix that talks to the server directly: the other
// process, and the inspector of what the faults left behind.
type faultEnv struct {
	proxy  *faultProxy
	slow   *Store // through the proxy
	direct *Store
}

func newFaultEnv(t *testing.T, retries int) *faultEnv {
	t.Helper()
	rdb := standalone(t)
	p := newFaultProxy(t, rdb.Options().Addr)
	via := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: retries, DialTimeout: time.Second,
		MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 5 * time.Millisecond})
	t.Cleanup(func() { via.Close() })
	prefix := testPrefix(t)
	mk := func(c redis.UniversalClient) *Store {
		s, err := New(context.Background(), c, WithKeyPrefix(prefix), WithLogger(quietLogger()), WithPollInterval(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	e := &faultEnv{proxy: p, slow: mk(via), direct: mk(rdb)}
	t.Cleanup(func() { cleanPrefix(rdb, prefix) })
	// Pay the one-time costs (eviction check, script load) before faults.
	if _, err := e.slow.Get(context.Background(), "warm-up"); !errors.Is(err, idem.ErrNotFound) {
		t.Fatal(err)
	}
	e.direct.Get(context.Background(), "warm-up")
	for _, s := range []*Store{e.slow, e.direct} {
		l := idemstore.Lease{Key: "warm-up", Owner: idemstore.Token{9}, Fence: 1}
		if _, err := s.Claim(context.Background(), idemstore.ClaimRequest{Key: "warm-up", Owner: l.Owner, Lease: time.Second, TTL: time.Second}); err != nil {
			t.Fatal(err)
		}
		s.Release(context.Background(), l)
	}
	return e
}

// call runs a guarded function that counts its executions.
func call(g *idem.Guard, spec *idem.Spec, id string, runs *atomic.Int64, during func(context.Context)) (string, error) {
	c := g.Begin(spec, id)
	return idem.Do(context.Background(), c, func(ctx context.Context) (string, error) {
		runs.Add(1)
		if during != nil {
			during(ctx)
		}
		return "done-" + id, nil
	})
}

func (e *faultEnv) record(t *testing.T, g *idem.Guard, spec *idem.Spec, id string) idemstore.Record {
	t.Helper()
	c := g.Begin(spec, id)
	key, err := c.StoreKey()
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.direct.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("record of %s: %v", id, err)
	}
	return r
}

// TestFaultResetMidClaim: the claim ran on the server but its reply was
// lost. With go-redis retries the retried script recognises its own claim;
// without them the caller gets ErrStoreUnavailable and the function does not
// run, the orphaned claim blocks other owners until its lease expires, and
// the next owner takes over with a higher fence.
func TestFaultResetMidClaim(t *testing.T) {
	spec := &idem.Spec{Name: "fault.claim", Lease: 300 * time.Millisecond}
	t.Run("retried", func(t *testing.T) {
		e := newFaultEnv(t, 3)
		var runs atomic.Int64
		e.proxy.CutReplies(1)
		got, err := call(idem.NewGuard(e.slow), spec, "a", &runs, nil)
		if err != nil || got != "done-a" || runs.Load() != 1 {
			t.Fatalf("call = %q, %v after %d runs; want done-a after 1", got, err, runs.Load())
		}
		if e.proxy.Cut() != 1 {
			t.Fatalf("proxy cut %d replies, want 1", e.proxy.Cut())
		}
		if r := e.record(t, idem.NewGuard(e.direct), spec, "a"); r.State != idemstore.StateCompleted || r.Fence != 1 {
			t.Fatalf("record = %v fence %d, want completed fence 1", r.State, r.Fence)
		}
	})
	t.Run("not retried", func(t *testing.T) {
		e := newFaultEnv(t, -1)
		gA, gB := idem.NewGuard(e.slow), idem.NewGuard(e.direct)
		var runs atomic.Int64
		e.proxy.CutReplies(1)
		_, err := call(gA, spec, "a", &runs, nil)
		if !errors.Is(err, idem.ErrStoreUnavailable) || runs.Load() != 0 {
			t.Fatalf("call = %v after %d runs; want ErrStoreUnavailable and no run", err, runs.Load())
		}
		// The claim took effect: one owner, the one that never heard.
		r := e.record(t, gB, spec, "a")
		if r.State != idemstore.StateInProgress || r.Fence != 1 {
			t.Fatalf("record = %v fence %d, want in_progress fence 1", r.State, r.Fence)
		}
		if _, err := call(gB, spec, "a", &runs, nil); !errors.Is(err, idem.ErrInProgress) || runs.Load() != 0 {
			t.Fatalf("second owner during the orphan's lease: %v, %d runs; want ErrInProgress", err, runs.Load())
		}
		time.Sleep(time.Until(r.LeaseUntil) + 20*time.Millisecond)
		if got, err := call(gB, spec, "a", &runs, nil); err != nil || got != "done-a" || runs.Load() != 1 {
			t.Fatalf("after the lease: %q, %v, %d runs", got, err, runs.Load())
		}
		if r := e.record(t, gB, spec, "a"); r.State != idemstore.StateCompleted || r.Fence != 2 {
			t.Fatalf("record = %v fence %d, want completed fence 2", r.State, r.Fence)
		}
	})
}

// TestFaultResetMidComplete: the completion ran but its reply was lost.
// The function ran once; the record is completed either way, and every
// later call replays it.
func TestFaultResetMidComplete(t *testing.T) {
	spec := &idem.Spec{Name: "fault.complete", Lease: 5 * time.Second}
	for _, tt := range []struct {
		name    string
		retries int
		wantErr error
	}{
		{"retried", 3, nil},
		{"not retried", -1, idem.ErrStoreUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newFaultEnv(t, tt.retries)
			var runs atomic.Int64
			got, err := call(idem.NewGuard(e.slow), spec, "a", &runs, func(context.Context) { e.proxy.CutReplies(1) })
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("call = %q, %v; want error %v", got, err, tt.wantErr)
			}
			if got != "done-a" {
				t.Fatalf("the function ran but its value was not returned: %q", got)
			}
			if e.proxy.Cut() != 1 {
				t.Fatalf("proxy cut %d replies, want 1", e.proxy.Cut())
			}
			r := e.record(t, idem.NewGuard(e.direct), spec, "a")
			_, body, _, err := idemimpl.SplitRecord(r.Result) // the Guard's identity header, then the result
			if err != nil || r.State != idemstore.StateCompleted || r.Fence != 1 || string(body) != `"done-a"` {
				t.Fatalf("record = %v fence %d result %s", r.State, r.Fence, r.Result)
			}
			for _, g := range []*idem.Guard{idem.NewGuard(e.direct), idem.NewGuard(e.slow)} {
				if got, err := call(g, spec, "a", &runs, nil); err != nil || got != "done-a" {
					t.Fatalf("replay = %q, %v", got, err)
				}
			}
			if runs.Load() != 1 {
				t.Fatalf("the function ran %d times", runs.Load())
			}
		})
	}
}

// TestFaultLatencyAboveLease: every hop to the server takes longer than the
// lease. The slow owner's claim lands, but by the time it hears back its
// lease is over; a second owner takes over with fence 2, and the slow
// owner's completion is rejected (ErrLeaseLost) so its result is not stored.
func TestFaultLatencyAboveLease(t *testing.T) {
	e := newFaultEnv(t, 0)
	const lease = 200 * time.Millisecond
	spec := &idem.Spec{Name: "fault.latency", Lease: lease}
	e.proxy.SetLatency(300 * time.Millisecond)
	gA, gB := idem.NewGuard(e.slow), idem.NewGuard(e.direct)

	var runsA, runsB atomic.Int64
	errA := make(chan error, 1)
	go func() {
		_, err := call(gA, spec, "a", &runsA, nil)
		errA <- err
	}()
	// A's claim reaches the server after 300ms and its lease ends 200ms
	// later; B comes after that, while A is still waiting for the reply.
	time.Sleep(300*time.Millisecond + lease + 50*time.Millisecond)
	got, err := call(gB, spec, "a", &runsB, nil)
	if err != nil || got != "done-a" || runsB.Load() != 1 {
		t.Fatalf("B = %q, %v, %d runs; want B to take over and run", got, err, runsB.Load())
	}
	err = <-errA
	if !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("A = %v, want ErrLeaseLost (its completion must be rejected)", err)
	}
	r := e.record(t, gB, spec, "a")
	if r.State != idemstore.StateCompleted || r.Fence != 2 {
		t.Fatalf("record = %v fence %d, want completed by B at fence 2", r.State, r.Fence)
	}

	// The same at store level: a stale owner's fenced writes all fail.
	e.proxy.SetLatency(0)
	lA := idemstore.Lease{Key: r.Key, Owner: idemstore.Token{0xA}, Fence: 1, Duration: lease, TTL: time.Minute}
	for name, err := range map[string]error{
		"heartbeat": e.slow.Heartbeat(context.Background(), lA),
		"complete":  e.slow.Complete(context.Background(), lA, idemstore.Result{Data: []byte("1")}),
		"release":   e.slow.Release(context.Background(), lA),
	} {
		if !errors.Is(err, idem.ErrLeaseLost) {
			t.Errorf("stale %s = %v, want ErrLeaseLost", name, err)
		}
	}
}

// privateRedis runs a redis-server of the test's own on a free port, with
// an append-only file synced on every write, so it can be killed and
// restarted without touching the shared server.
type privateRedis struct {
	t    *testing.T
	dir  string
	port int
	cmd  *exec.Cmd
}

func startPrivateRedis(t *testing.T) *privateRedis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		testenv.Need(t, "redis-server binary", "install it with `apt-get install redis-server` (scripts/redis-cluster.sh does)", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r := &privateRedis{t: t, dir: t.TempDir(), port: port}
	r.start()
	t.Cleanup(r.kill)
	return r
}

// privateClient is a client of a private server (startPrivateRedis),
// closed when the test ends.
func privateClient(t *testing.T) *redis.Client {
	t.Helper()
	srv := startPrivateRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.addr()})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// privateStore is a quiet store with opts on a private server, and the
// server's client. The test closes the store.
func privateStore(t *testing.T, opts ...Option) (*Store, *redis.Client) {
	t.Helper()
	rdb := privateClient(t)
	s, err := New(context.Background(), rdb, append([]Option{WithLogger(quietLogger())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s, rdb
}

func (r *privateRedis) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

func (r *privateRedis) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--dir", r.dir, "--save", "", "--appendonly", "yes", "--appendfsync", "always",
		"--maxmemory-policy", "noeviction", "--logfile", filepath.Join(r.dir, "redis.log"))
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: r.addr(), MaxRetries: -1})
	defer c.Close()
	for i := 0; i < 100; i++ {
		if c.Ping(context.Background()).Err() == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(r.dir, "redis.log"))
	r.t.Fatalf("private redis-server did not start:\n%s", log)
}

// kill stops the server the hard way (SIGKILL, like a crash) and reaps it.
func (r *privateRedis) kill() {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Signal(syscall.SIGKILL)
	r.cmd.Wait()
	r.cmd = nil
}

// TestFaultServerRestart: the server crashes while a key is in progress and
// comes back from its append-only file. While it is down every operation
// fails with ErrStoreUnavailable; afterwards the record is as it was (no
// second owner), the owner completes it (scripts are reloaded on demand),
// and a waiter that was blocked across the crash is woken by the
// completion through its re-established subscription.
func TestFaultServerRestart(t *testing.T) {
	srv := startPrivateRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.addr(), DialTimeout: 200 * time.Millisecond,
		MaxRetries: 1, MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 10 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	s, err := New(context.Background(), rdb, WithLogger(quietLogger()), WithPollInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	req := func(owner byte) idemstore.ClaimRequest {
		return idemstore.ClaimRequest{Key: "k", Fingerprint: idemstore.Fingerprint{1}, Owner: idemstore.Token{owner}, Lease: 30 * time.Second, TTL: time.Hour}
	}
	res, err := s.Claim(ctx, req(0xA))
	if err != nil || res.Status != idemstore.ClaimAcquired {
		t.Fatalf("claim = %v, %v", res.Status, err)
	}
	lA := idemstore.Lease{Key: "k", Owner: idemstore.Token{0xA}, Fence: res.Fence, Duration: 30 * time.Second, TTL: time.Hour}

	waited := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		waited <- s.Wait(wctx, "k")
	}()
	time.Sleep(100 * time.Millisecond) // the waiter is subscribed

	srv.kill()
	if _, err := s.Claim(ctx, req(0xB)); !errors.Is(err, idem.ErrStoreUnavailable) {
		t.Fatalf("claim while down = %v, want ErrStoreUnavailable", err)
	}
	if err := s.Complete(ctx, lA, idemstore.Result{Data: []byte(`1`)}); !errors.Is(err, idem.ErrStoreUnavailable) {
		t.Fatalf("complete while down = %v, want ErrStoreUnavailable", err)
	}
	select {
	case err := <-waited:
		t.Fatalf("the waiter returned while the owner was still running: %v", err)
	default:
	}

	srv.start()
	// The record survived: the second owner still finds A in progress.
	var res2 idemstore.ClaimResult
	for i := 0; i < 50; i++ {
		if res2, err = s.Claim(ctx, req(0xB)); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || res2.Status != idemstore.ClaimInProgress || res2.Fence != lA.Fence {
		t.Fatalf("claim after restart = %v fence %d, %v; want in_progress fence %d", res2.Status, res2.Fence, err, lA.Fence)
	}
	if err := s.Complete(ctx, lA, idemstore.Result{Data: []byte(`1`)}); err != nil {
		t.Fatalf("owner's complete after restart: %v", err)
	}
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("waiter = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken after the restart")
	}
	r, err := s.Get(ctx, "k")
	if err != nil || r.State != idemstore.StateCompleted || r.Fence != lA.Fence || string(r.Result) != "1" {
		t.Fatalf("record = %+v, %v", r, err)
	}
	if res, err := s.Claim(ctx, req(0xC)); err != nil || res.Status != idemstore.ClaimCompleted {
		t.Fatalf("replay after restart = %v, %v", res.Status, err)
	}
}
