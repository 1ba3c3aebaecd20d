package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// The Sentinel set of scripts/redis-failover.sh: a primary and a replica
// on 7201-7202, Sentinels on 7211-7213.
const failoverMaster = "idem-failover"

var sentinelAddrs = []string{"127.0.0.1:7211", "127.0.0.1:7212", "127.0.0.1:7213"}

var failoverMu sync.Mutex // one test at a time kills the set's primary

// failoverScript runs scripts/redis-failover.sh with args.
func failoverScript(args ...string) error { return failoverScriptHold(false, args...) }

// failoverScriptHold runs the script; with hold a node it brings back is
// not promotable until settleSentinel lifts that (see the script).
func failoverScriptHold(hold bool, args ...string) error {
	// Bounded: a node that never becomes healthy fails the test, not the
	// package's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{"../../scripts/redis-failover.sh"}, args...)...)
	if hold {
		cmd.Env = append(os.Environ(), "IDEM_REDIS_FAILOVER_HOLD=1")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return errors.New(strings.TrimSpace(string(out)))
	}
	return nil
}

// sentinelSet starts (or checks) the Sentinel set and returns a failover
// client for it, or skips (fails under CI=true) when it cannot start.
func sentinelSet(t testing.TB) *redis.Client {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		testenv.Need(t, "redis-server", "install it (apt-get install redis-server)", err)
	}
	if err := failoverScript("start", "sentinel"); err != nil {
		testenv.Need(t, "the Sentinel set on 7201-7202, 7211-7213", "run `bash scripts/redis-failover.sh start` (or `make services`)", err)
	}
	// The Sentinels wait 5s before they call a primary down: at 1s (their
	// ping period) a Sentinel calls a primary it has just switched to down
	// before its first PING is answered and fails it over unasked, possibly
	// onto the node the test just brought back, which it takes for
	// promotable until its first INFO of it (see doc.go, the failure
	// model). The tests' own failovers are forced (SENTINEL FAILOVER).
	for _, a := range sentinelAddrs {
		sc := redis.NewSentinelClient(&redis.Options{Addr: a, DialTimeout: time.Second})
		err := sc.Set(context.Background(), failoverMaster, "down-after-milliseconds", "5000").Err()
		sc.Close()
		if err != nil {
			t.Fatalf("Sentinel %s: %v", a, err)
		}
	}
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: failoverMaster, SentinelAddrs: sentinelAddrs,
		DialTimeout: time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// nodeAddr is the Sentinels' primary now.
func sentinelPrimary(ctx context.Context) (string, error) {
	var last error
	for _, a := range sentinelAddrs {
		sc := redis.NewSentinelClient(&redis.Options{Addr: a, DialTimeout: time.Second})
		m, err := sc.GetMasterAddrByName(ctx, failoverMaster).Result()
		sc.Close()
		if err == nil && len(m) == 2 {
			return m[0] + ":" + m[1], nil
		}
		last = err
	}
	return "", last
}

func serverPid(ctx context.Context, addr string) (int, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second})
	defer c.Close()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("no process_id in INFO server")
}

// sentinelNodes is the primary's and the replica's address and pid.
type sentinelNodes struct {
	primary, replica       string
	primaryPid, replicaPid int
}

func currentNodes(t *testing.T, ctx context.Context) sentinelNodes {
	t.Helper()
	p, err := sentinelPrimary(ctx)
	if err != nil {
		t.Fatalf("no primary from the Sentinels: %v", err)
	}
	n := sentinelNodes{primary: p, replica: "127.0.0.1:7201"}
	if p == n.replica {
		n.replica = "127.0.0.1:7202"
	}
	if n.primaryPid, err = serverPid(ctx, n.primary); err != nil {
		t.Fatal(err)
	}
	if n.replicaPid, err = serverPid(ctx, n.replica); err != nil {
		t.Fatal(err)
	}
	return n
}

// isolateReplica stops the replica (SIGSTOP) and cuts its link, so that
// what the primary acknowledges from now on reaches no replica.
func isolateReplica(t *testing.T, ctx context.Context, n sentinelNodes) {
	t.Helper()
	if err := syscall.Kill(n.replicaPid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// A test that fails before promoting must not leave the replica stopped.
	t.Cleanup(func() { syscall.Kill(n.replicaPid, syscall.SIGCONT) })
	c := redis.NewClient(&redis.Options{Addr: n.primary})
	defer c.Close()
	if err := c.ClientKillByFilter(ctx, "TYPE", "replica").Err(); err != nil {
		syscall.Kill(n.replicaPid, syscall.SIGCONT)
		t.Fatal(err)
	}
}

// promote SIGKILLs the primary, lets the replica run again and has the
// Sentinels promote it, then brings the old primary back as the new one's
// replica (the script), so WAIT has a replica again. The node comes back
// empty: it is made promotable only once in sync (settleSentinel), so
// that no failover, asked for or not, can land on it before it holds the
// data (the failure model in doc.go).
func promote(t *testing.T, ctx context.Context, n sentinelNodes) {
	t.Helper()
	if err := syscall.Kill(n.primaryPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(n.replicaPid, syscall.SIGCONT)
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinelAddrs[0], DialTimeout: time.Second})
	defer sc.Close()
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for {
		if p, err := sentinelPrimary(ctx); err == nil && p == n.replica {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Sentinels did not promote %s: %v", n.replica, last)
		}
		// Refused while a failover runs or the replica still looks down.
		if err := sc.Failover(ctx, failoverMaster).Err(); err != nil {
			last = err
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := failoverScriptHold(true, "start", "sentinel"); err != nil {
		t.Fatalf("bringing %s back as a replica: %v", n.primary, err)
	}
	settleSentinel(t, ctx)
}

// replicationInfo is INFO replication of addr as a map.
func replicationInfo(ctx context.Context, addr string) (map[string]string, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second})
	defer c.Close()
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}

// settledSentinel holds failoverMu for the rest of t and returns a
// client of the Sentinel set once its replica is in sync and promotable
// (settleSentinel).
func settledSentinel(t *testing.T) *redis.Client {
	failoverMu.Lock()
	t.Cleanup(failoverMu.Unlock)
	rdb := sentinelSet(t)
	settleSentinel(t, context.Background())
	return rdb
}

// settleSentinel waits until the replica is in sync with the primary (its
// link up, no sync in progress, its offset caught up), then makes it
// promotable (replica-priority 100) and waits until every Sentinel sees
// that, which takes up to their 10s INFO period.
func settleSentinel(t *testing.T, ctx context.Context) {
	t.Helper()
	n := currentNodes(t, ctx)
	host, port, _ := strings.Cut(n.primary, ":")
	deadline := time.Now().Add(time.Minute)
	for {
		p, err := replicationInfo(ctx, n.primary)
		var r map[string]string
		if err == nil {
			r, err = replicationInfo(ctx, n.replica)
		}
		if err == nil {
			po, _ := strconv.ParseInt(p["master_repl_offset"], 10, 64)
			ro, _ := strconv.ParseInt(r["slave_repl_offset"], 10, 64)
			if r["master_host"] == host && r["master_port"] == port && r["master_link_status"] == "up" &&
				r["master_sync_in_progress"] == "0" && ro >= po {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not in sync with %s: %v %v", n.replica, n.primary, r, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	rc := redis.NewClient(&redis.Options{Addr: n.replica, DialTimeout: time.Second})
	defer rc.Close()
	if err := rc.ConfigSet(ctx, "replica-priority", "100").Err(); err != nil {
		t.Fatal(err)
	}
	for _, a := range sentinelAddrs {
		sc := redis.NewSentinelClient(&redis.Options{Addr: a, DialTimeout: time.Second})
		for ok := false; !ok; {
			reps, err := sc.Replicas(ctx, failoverMaster).Result()
			for _, r := range reps {
				ok = ok || (r["ip"]+":"+r["port"] == n.replica && r["slave-priority"] == "100" && r["master-link-status"] == "ok" && r["flags"] == "slave")
			}
			if !ok && time.Now().After(deadline) {
				sc.Close()
				t.Fatalf("Sentinel %s does not see %s promotable: %v %v", a, n.replica, reps, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		sc.Close()
	}
}

// TestFailoverAcksSkipReplicaInFirstSync: a replica that came back empty
// and is still in its first full sync does not acknowledge anything, so a
// claim made then is refused (ErrNotReplicated), not counted as
// replicated to a node that would lose it if promoted. (What WAIT counts:
// only replicas whose link is up and whose acknowledged offset covers the
// write.)
func TestFailoverAcksSkipReplicaInFirstSync(t *testing.T) {
	rdb := settledSentinel(t)
	ctx := context.Background()
	acked := newStore(t, rdb, WithReplicaAcks(1, 500*time.Millisecond), WithClockFences())
	claim := func(k string) error {
		_, err := acked.Claim(ctx, idemstore.ClaimRequest{Key: "firstsync:" + k, Owner: idemstore.Token{3}, Lease: 20 * time.Second, TTL: time.Minute})
		return err
	}
	if err := claim("before"); err != nil {
		t.Fatalf("claim with the replica in sync: %v", err)
	}

	n := currentNodes(t, ctx)
	// A replica keeps the RDB of its last full sync on disk and would
	// come back with it, possibly resyncing partially: remove it, so the
	// node comes back empty and needs a full sync.
	rc := redis.NewClient(&redis.Options{Addr: n.replica, DialTimeout: time.Second})
	dir, err1 := rc.ConfigGet(ctx, "dir").Result()
	file, err2 := rc.ConfigGet(ctx, "dbfilename").Result()
	rc.Close()
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(n.replicaPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir["dir"], file["dbfilename"])); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	// The script brings the replica back (not promotable) and returns
	// once its full sync is done, which the primary's
	// repl-diskless-sync-delay (5s by default) holds back.
	back := make(chan error, 1)
	go func() { back <- failoverScriptHold(true, "start", "sentinel") }()
	t.Cleanup(func() {
		// A test that stopped early still leaves the set whole.
		if err := <-back; err != nil {
			t.Errorf("bringing %s back: %v", n.replica, err)
			return
		}
		settleSentinel(t, ctx)
	})
	var state string
	deadline := time.Now().Add(30 * time.Second)
	for {
		p, err := replicationInfo(ctx, n.primary)
		if err == nil {
			state = p["slave0"]
			if strings.Contains(state, "port="+strings.Split(n.replica, ":")[1]) && !strings.Contains(state, "state=online") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("never saw %s in its first sync (slave0 %q): %v", n.replica, state, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	err := claim("during")
	p, _ := replicationInfo(ctx, n.primary)
	if strings.Contains(p["slave0"], "state=online") {
		t.Logf("the sync ended during the claim (%s): inconclusive", p["slave0"])
	} else if !errors.Is(err, ErrNotReplicated) {
		t.Errorf("claim while the only replica is in its first sync (%s): %v, want ErrNotReplicated", state, err)
	}
}

// TestFailoverSentinel: one promotion of the Sentinel set's replica after
// the primary is SIGKILLed with writes the replica never received. Without
// the options the failover loses a completion (the function runs again)
// and a claim's fence (the next owner gets the same fence); with
// WithReplicaAcks a claim the replica did not acknowledge is not executed
// under, acknowledged completions survive, and a completion written
// across the failover is retried onto the promoted primary; with
// WithClockFences the next fence is higher than the lost one.
func TestFailoverSentinel(t *testing.T) {
	rdb := settledSentinel(t)
	ctx := context.Background()
	plain := newStore(t, rdb)
	acked := newStore(t, rdb, WithReplicaAcks(1, 500*time.Millisecond), WithClockFences())
	clock := newStore(t, rdb, WithClockFences())

	spec := &idem.Spec{Name: "failover.f", Lease: 20 * time.Second, OnDuplicate: idem.DuplicateWait}
	runs := map[string]*atomic.Int64{}
	for _, k := range []string{"done", "lost", "unacked", "across"} {
		runs[k] = new(atomic.Int64)
	}
	do := func(s *Store, k string, fn func(context.Context)) (string, error) {
		c := idem.NewGuard(s).Begin(spec, k)
		return idem.Do(ctx, c, func(ctx context.Context) (string, error) {
			runs[k].Add(1)
			if fn != nil {
				fn(ctx)
			}
			return "v:" + k, nil
		})
	}
	claim := func(s *Store, k string) idemstore.ClaimResult {
		t.Helper()
		res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "claim:" + k, Owner: idemstore.Token{1}, Lease: 20 * time.Second, TTL: time.Minute})
		if err != nil || res.Status != idemstore.ClaimAcquired {
			t.Fatalf("claim %s = %+v, %v", k, res, err)
		}
		return res
	}

	// Before the failover, with the replica in sync.
	if _, err := do(acked, "done", nil); err != nil {
		t.Fatal(err)
	}
	acrossFence := make(chan uint64, 1)
	letGo := make(chan struct{})
	var across sync.WaitGroup
	var acrossRes string
	var acrossErr error
	across.Add(1)
	go func() {
		defer across.Done()
		acrossRes, acrossErr = do(acked, "across", func(ctx context.Context) {
			f, _ := idem.FenceFrom(ctx)
			acrossFence <- f
			<-letGo
		})
	}()
	beforeFence := <-acrossFence

	n := currentNodes(t, ctx)
	isolateReplica(t, ctx, n)
	// Acknowledged by the primary only.
	if _, err := do(plain, "lost", nil); err != nil {
		t.Fatal(err)
	}
	_, err := do(acked, "unacked", nil)
	if !errors.Is(err, ErrNotReplicated) || !errors.Is(err, idem.ErrStoreUnavailable) || runs["unacked"].Load() != 0 {
		t.Fatalf("claim without its acknowledgement: Do = %v after %d runs, want ErrNotReplicated and no run", err, runs["unacked"].Load())
	}
	lostPlain, lostClock := claim(plain, "fence"), claim(clock, "fence")

	promote(t, ctx, n)

	close(letGo) // its completion goes to the promoted primary
	across.Wait()
	if acrossErr != nil || acrossRes != "v:across" {
		t.Fatalf("completion across the failover: %q, %v", acrossRes, acrossErr)
	}
	for _, tc := range []struct {
		s        *Store
		key      string
		wantRuns int64
	}{
		{acked, "done", 1},    // acknowledged: replayed after the failover
		{acked, "across", 1},  // completed on the promoted primary
		{acked, "unacked", 1}, // never held: runs now, once
		{plain, "lost", 2},    // the failure mode the options exist for
	} {
		got, err := do(tc.s, tc.key, nil)
		if err != nil || got != "v:"+tc.key || runs[tc.key].Load() != tc.wantRuns {
			t.Errorf("%s after the failover: %q, %v with %d runs, want %d", tc.key, got, err, runs[tc.key].Load(), tc.wantRuns)
		}
	}
	if res := claim(plain, "fence"); res.Fence != lostPlain.Fence {
		t.Errorf("plain fences: %d after the failover, %d lost with the old primary: the set-up did not lose the claim", res.Fence, lostPlain.Fence)
	}
	if res := claim(clock, "fence"); res.Fence <= lostClock.Fence {
		t.Errorf("clock fences: %d after the failover, not above the lost %d", res.Fence, lostClock.Fence)
	}
	if res := claim(acked, "after"); res.Fence <= beforeFence {
		t.Errorf("acked clock fences: %d after the failover, not above %d before it", res.Fence, beforeFence)
	}
}

// TestFailoverCluster: one promotion in the failover Cluster. The master
// that owns the test's keys is SIGKILLed after its replica was cut off,
// and the replica promoted with CLUSTER FAILOVER FORCE. With
// WithReplicaAcks a claim made while the replica is cut off is not run
// under, an acknowledged completion is replayed after the promotion, and
// a function that was running across it records its result on the
// promoted master (the confirmation follows the slot to its new owner);
// with WithClockFences the fences after it are higher.
func TestFailoverCluster(t *testing.T) {
	failoverMu.Lock()
	defer failoverMu.Unlock()
	rdb := failoverCluster(t)
	ctx := context.Background()
	s := newStore(t, rdb, WithReplicaAcks(1, 500*time.Millisecond), WithClockFences())
	spec := &idem.Spec{Name: "failover.c", Lease: 20 * time.Second, OnDuplicate: idem.DuplicateWait}
	// The Guard hashes key material into its store key, so the test picks
	// key names whose records one master owns: the one it kills.
	masterOf := func(name string) string {
		c := idem.NewGuard(s).Begin(spec, name)
		sk, err := c.StoreKey()
		if err != nil {
			t.Fatal(err)
		}
		n, err := rdb.MasterForKey(ctx, s.RecordKey(sk))
		if err != nil {
			t.Fatal(err)
		}
		return n.Options().Addr
	}
	m := masterOf("done")
	names := map[string]string{"done": "done"}
	for _, k := range []string{"unacked", "across", "after"} {
		for i := 0; ; i++ {
			if name := k + strconv.Itoa(i); masterOf(name) == m {
				names[k] = name
				break
			}
		}
	}
	key := func(k string) string { return names[k] }
	runs := map[string]*atomic.Int64{}
	for _, k := range []string{"done", "unacked", "across"} {
		runs[k] = new(atomic.Int64)
	}
	do := func(k string, fn func(context.Context)) (string, error) {
		c := idem.NewGuard(s).Begin(spec, key(k))
		return idem.Do(ctx, c, func(ctx context.Context) (string, error) {
			runs[k].Add(1)
			if fn != nil {
				fn(ctx)
			}
			return "v:" + k, nil
		})
	}
	if _, err := do("done", nil); err != nil {
		t.Fatal(err)
	}
	fences := make(chan uint64, 1)
	letGo := make(chan struct{})
	acrossErr := make(chan error, 1)
	go func() {
		_, err := do("across", func(ctx context.Context) {
			f, _ := idem.FenceFrom(ctx)
			fences <- f
			<-letGo
		})
		acrossErr <- err
	}()
	before := <-fences

	replica := clusterReplicaOf(t, ctx, m)
	mPid, err := serverPid(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	rPid, err := serverPid(ctx, replica)
	if err != nil {
		t.Fatal(err)
	}
	isolateReplica(t, ctx, sentinelNodes{primary: m, replica: replica, primaryPid: mPid, replicaPid: rPid})
	_, err = do("unacked", nil)
	if !errors.Is(err, ErrNotReplicated) || runs["unacked"].Load() != 0 {
		t.Fatalf("claim without its acknowledgement: Do = %v after %d runs, want ErrNotReplicated and no run", err, runs["unacked"].Load())
	}
	syscall.Kill(mPid, syscall.SIGKILL)
	syscall.Kill(rPid, syscall.SIGCONT)
	rc := redis.NewClient(&redis.Options{Addr: replica, DialTimeout: time.Second})
	defer rc.Close()
	forceFailover(ctx, t, rc, replica)
	if err := failoverScript("start", "cluster"); err != nil {
		t.Fatalf("bringing %s back as a replica: %v", m, err)
	}
	close(letGo)
	if err := <-acrossErr; err != nil {
		t.Fatalf("completion across the failover: %v", err)
	}
	for _, k := range []string{"done", "across", "unacked"} {
		if got, err := do(k, nil); err != nil || got != "v:"+k || runs[k].Load() != 1 {
			t.Errorf("%s after the failover: %q, %v with %d runs, want 1", k, got, err, runs[k].Load())
		}
	}
	c := idem.NewGuard(s).Begin(spec, key("after"))
	after, _ := c.StoreKey()
	res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: after, Owner: idemstore.Token{9}, Lease: time.Second, TTL: time.Minute})
	if err != nil || res.Fence <= before {
		t.Errorf("claim after the failover: %+v, %v; want a fence above %d", res, err, before)
	}
}

// clusterReplicaOf is the address of master's replica.
func clusterReplicaOf(t *testing.T, ctx context.Context, master string) string {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: master})
	defer c.Close()
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		// slave0:ip=127.0.0.1,port=7224,state=online,offset=…,lag=0
		if strings.HasPrefix(line, "slave0:") {
			var ip, port string
			for _, kv := range strings.Split(strings.TrimPrefix(strings.TrimSpace(line), "slave0:"), ",") {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "ip":
					ip = v
				case "port":
					port = v
				}
			}
			return ip + ":" + port
		}
	}
	t.Fatalf("%s has no replica:\n%s", master, info)
	return ""
}

// forceFailover forces a Cluster failover on replica (rc) until it is a master,
// for a minute at most.
func forceFailover(ctx context.Context, t *testing.T, rc *redis.Client, replica string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		info, err := rc.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "role:master") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not promoted: %v", replica, err)
		}
		_ = rc.Do(ctx, "cluster", "failover", "force").Err()
		time.Sleep(300 * time.Millisecond)
	}
}

// startSentinel runs a private Sentinel (redis-server --sentinel) that
// monitors master as "idem-master", and returns its address.
func startSentinel(t *testing.T, master *privateRedis) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\nsentinel monitor idem-master 127.0.0.1 %d 1\n",
		port, dir, filepath.Join(dir, "sentinel.log"), master.port)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("redis-server", conf, "--sentinel")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	sc := redis.NewSentinelClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer sc.Close()
	for i := 0; i < 100; i++ {
		if a, err := sc.GetMasterAddrByName(context.Background(), "idem-master").Result(); err == nil && len(a) == 2 {
			return addr
		}
		time.Sleep(20 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "sentinel.log"))
	t.Fatalf("sentinel did not start:\n%s", log)
	return ""
}

// TestSentinel: the store over a Sentinel failover client (a private master
// and Sentinel): first execution, replay, waiting duplicates woken by
// pub/sub, and the start-up policy check.
func TestSentinel(t *testing.T) {
	master := startPrivateRedis(t)
	sentinel := startSentinel(t, master)
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{MasterName: "idem-master", Addrs: []string{sentinel}})
	t.Cleanup(func() { rdb.Close() })
	s, err := New(context.Background(), rdb, WithLogger(quietLogger()), WithEvictionCheck(EvictionRefuse))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	g := idem.NewGuard(s)
	spec := &idem.Spec{Name: "sentinel.f", Lease: 5 * time.Second, OnDuplicate: idem.DuplicateWait}
	var runs atomic.Int64
	release := make(chan struct{})
	do := func(g *idem.Guard) (string, error) {
		c, k := idemimpl.Begin(g, spec)
		k.Key().String("k")
		return idem.Do(context.Background(), c, func(context.Context) (string, error) {
			runs.Add(1)
			<-release
			return "v", nil
		})
	}
	// Two Guards: the second stands for another process, so it reaches
	// the store (a Guard answers its own duplicates in process).
	other := idem.NewGuard(s)
	var wg sync.WaitGroup
	results := make([]string, 3)
	errs := make([]error, 3)
	wg.Add(1)
	go func() { defer wg.Done(); results[0], errs[0] = do(g) }()
	for runs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	for i := 1; i < 3; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); results[i], errs[i] = do(other) }()
	}
	time.Sleep(100 * time.Millisecond) // the duplicates are waiting
	close(release)
	wg.Wait()
	for i := range results {
		if errs[i] != nil || results[i] != "v" {
			t.Fatalf("call %d = %q, %v", i, results[i], errs[i])
		}
	}
	if runs.Load() != 1 {
		t.Fatalf("the function ran %d times, want 1", runs.Load())
	}
	if got, err := do(idem.NewGuard(s)); err != nil || got != "v" || runs.Load() != 1 {
		t.Fatalf("replay = %q, %v after %d runs", got, err, runs.Load())
	}
}
