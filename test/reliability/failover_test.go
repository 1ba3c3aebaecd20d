package reliability

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/redis/go-redis/v9"
)

// Redis failover rows: a duplicate storm against a Redis deployment with
// replicas (scripts/redis-failover.sh: a Sentinel set, and a Cluster of
// three masters with a replica each) during which the primary of the
// storm's keys is SIGKILLed and its replica promoted several times. Before
// each kill the replica is cut off (SIGSTOP, its link closed) for a
// moment, as a lagging or partitioned replica is, so the primary
// acknowledges writes no replica has: those are lost on promotion. The
// killed node comes back as the new primary's replica without the current
// data (only the RDB of its last full sync as a replica, if any).
//
// Three kinds of row:
//   - without WithReplicaAcks: the rows count the duplicates that follow
//     (the report lists them as the self-test rows' are);
//   - with WithReplicaAcks and WithClockFences, inside the failure model
//     that runtime/redisstore's doc.go states (only a replica that holds
//     the acknowledged writes is ever promoted): a node that comes back is
//     not promotable until its resync is done (replica-priority 0 or
//     cluster-replica-no-failover, lifted once its link is up and its
//     offset has caught up, and for Sentinel once every Sentinel sees
//     that), and no kill comes before then. These rows must show none;
//   - with acks, beyond the model (Sentinel): a node that comes back is
//     promotable at once, as Redis's defaults have it, and the promotions
//     come at the storm's pace. A failover, requested or not, can then
//     land on the node that lacks the data and the acknowledged writes are
//     lost; the row shows it.

const (
	// failoverCut is how long the replica is cut off before each kill.
	failoverCut        = 2 * time.Second
	failoverMasterName = "idem-failover"
	failoverHowTo      = "bash scripts/redis-failover.sh start (or make services)"
)

var (
	failoverSentinels = []string{"127.0.0.1:7211", "127.0.0.1:7212", "127.0.0.1:7213"}
	failoverCluster   = []string{"127.0.0.1:7221", "127.0.0.1:7222", "127.0.0.1:7223", "127.0.0.1:7224", "127.0.0.1:7225", "127.0.0.1:7226"}
)

// openFailoverStore opens the failover rows' stores; ok is false for
// every other store.
func openFailoverStore(ctx context.Context, cfg workerConfig) (st idemstore.Store, closeFn func(), ok bool, err error) {
	var rdb redis.UniversalClient
	switch cfg.Store {
	case "redis-sentinel":
		rdb = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: failoverMasterName, SentinelAddrs: cfg.FailoverAddrs,
			PoolSize: 16, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: time.Second})
	case "redis-cluster-failover":
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: cfg.FailoverAddrs,
			PoolSize: 16, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: time.Second})
	default:
		return nil, nil, false, nil
	}
	opts := []redisstore.Option{redisstore.WithKeyPrefix(cfg.RedisPrefix),
		redisstore.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))}
	if cfg.ReplicaAcks {
		opts = append(opts, redisstore.WithReplicaAcks(1, 500*time.Millisecond), redisstore.WithClockFences())
	}
	s, err := redisstore.New(ctx, rdb, opts...)
	if err != nil {
		rdb.Close()
		return nil, nil, true, err
	}
	return s, func() { s.Close(); rdb.Close() }, true, nil
}

// failoverSizes: a storm spread over spread, with promotions kills.
type failoverSizes struct {
	procs, goroutines, keys, deliveries int
	spread                              time.Duration
	promotions                          int
}

func failoverLevel(full bool) failoverSizes {
	if full {
		return failoverSizes{procs: 3, goroutines: 8, keys: 150, deliveries: 4, spread: 40 * time.Second, promotions: 4}
	}
	return failoverSizes{procs: 2, goroutines: 6, keys: 60, deliveries: 3, spread: 14 * time.Second, promotions: 2}
}

// failoverMode is a failover row's variant (see the comment at the top).
type failoverMode int

const (
	noAcks      failoverMode = iota // without WithReplicaAcks: duplicates expected
	acksInModel                     // with acks, failovers inside the model: none allowed
	acksBeyond                      // with acks, a restarted replica promotable before its resync: duplicates expected
)

func (m failoverMode) String() string {
	return [...]string{"without-acks", "with-acks", "with-acks-beyond-model"}[m]
}

// failoverRows is which rows run: the short version (make test) only the
// one that must hold on the deployment that has lost data that way.
func failoverRows(full bool, dep string) []failoverMode {
	switch {
	case !full && dep == "sentinel":
		return []failoverMode{acksInModel}
	case !full:
		return nil
	case dep == "sentinel":
		return []failoverMode{noAcks, acksInModel, acksBeyond}
	}
	return []failoverMode{noAcks, acksInModel}
}

// TestReliabilityFailover runs the failover storm on the Sentinel set and
// the Cluster, without and with replica acknowledgements.
func TestReliabilityFailover(t *testing.T) {
	h := newHarness(t)
	sz := failoverLevel(h.full)
	report.full = h.full
	for _, dep := range []string{"sentinel", "cluster"} {
		modes := failoverRows(h.full, dep)
		if len(modes) == 0 {
			continue
		}
		t.Run(dep, func(t *testing.T) {
			if _, err := exec.LookPath("redis-server"); err != nil {
				missing(t, "redis-server", err, "apt-get install redis-server")
			}
			if err := failoverScript(false, "start", dep); err != nil {
				missing(t, "the Redis "+dep+" with replicas", err, failoverHowTo)
			}
			for _, mode := range modes {
				t.Run(mode.String(), func(t *testing.T) {
					if dep == "sentinel" {
						// Inside the model the Sentinels wait 5s before
						// they call a primary down: at 1s, the Sentinels'
						// own ping period, a Sentinel may call a primary
						// it has just switched to down before its first
						// PING is answered and fail it over unasked
						// (measured in docs/RELIABILITY.md), before its
						// first INFO of the restarted replica tells it
						// that one is not promotable. The other rows
						// keep 1s.
						downAfter := time.Second
						if mode == acksInModel {
							downAfter = 5 * time.Second
						}
						if err := sentinelDownAfter(context.Background(), downAfter); err != nil {
							t.Fatal(err)
						}
					}
					if mode == acksInModel {
						// A previous row may have left a node that is
						// not promotable, or not yet in sync.
						if err := settle(context.Background(), dep); err != nil {
							t.Fatalf("the %s is not inside the failure model before the row: %v", dep, err)
						}
					}
					r := h.failoverStorm(t, dep, mode, sz)
					if mode != acksInModel {
						r.expectViolations = true
						if r.v.n() == 0 {
							// Not fatal: the loss needs writes inside the
							// cut-off window (or a promotion onto a
							// replica not in sync), which a run may not
							// make. The row shows it.
							t.Logf("no violation in %s this run", mode)
						}
					}
					record(t, r)
				})
			}
		})
	}
}

// failoverScript runs scripts/redis-failover.sh; hold starts a node it
// brings back as a replica that cannot be promoted (see the script).
func failoverScript(hold bool, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{"../../scripts/redis-failover.sh"}, args...)...)
	if hold {
		cmd.Env = append(os.Environ(), "IDEM_REDIS_FAILOVER_HOLD=1")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("redis-failover.sh %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (h *harness) failoverStorm(t *testing.T, dep string, mode failoverMode, sz failoverSizes) row {
	acks := mode != noAcks
	prefix := fmt.Sprintf("redis-%s-%s/failover/", dep, map[failoverMode]string{noAcks: "without", acksInModel: "with", acksBeyond: "beyond"}[mode])
	deliveries := shuffled(numbered(prefix, sz.keys), sz.deliveries)
	start := time.Now()
	procs := h.startSpread(t, sz.procs, deliveries, func() workerConfig {
		cfg := h.base("redis", "storm", "")
		cfg.Store, cfg.StoreAddr = "redis-sentinel", ""
		cfg.FailoverAddrs = failoverSentinels
		if dep == "cluster" {
			cfg.Store, cfg.FailoverAddrs = "redis-cluster-failover", failoverCluster
		}
		cfg.ReplicaAcks, cfg.RetryErrors = acks, true
		cfg.Goroutines, cfg.Spread = sz.goroutines, sz.spread
		cfg.HoldMin, cfg.HoldMax = 20*time.Millisecond, 150*time.Millisecond
		cfg.Deadline, cfg.CallTimeout = sz.spread+2*time.Minute, time.Minute
		return cfg
	})
	v := &violations{}
	waitReady(v, procs)
	// The promotions, spread over the storm.
	ctx := context.Background()
	promoted, lastAt := 0, time.Duration(0)
	gap := sz.spread / time.Duration(sz.promotions+1)
	hold := mode == acksInModel
	for i := range sz.promotions {
		time.Sleep(max(time.Until(start.Add(gap*time.Duration(i+1))), 0))
		var err error
		if dep == "cluster" {
			err = promoteCluster(ctx, hold)
		} else {
			err = promoteSentinel(ctx, hold)
		}
		if err != nil {
			v.add("promotion %d: %v", i+1, err)
			break
		}
		promoted++
		lastAt = time.Since(start)
	}
	calls, events := collect(v, procs, nil)
	answered, retried := map[string]int{}, 0
	for _, c := range calls {
		if c.Class == "ok" {
			answered[c.Key]++
		} else {
			retried++
		}
	}
	for _, k := range deliveries {
		if answered[k] == 0 {
			v.add("%s: no caller ever got a result", k)
			answered[k] = -1 // once per key
		}
	}
	final := agree(v, calls)
	execs := h.exactlyOnce(t, v, prefix, final, sz.keys)
	depName := map[string]string{"sentinel": "Sentinel", "cluster": "Cluster"}[dep]
	scenario := map[failoverMode]string{
		noAcks:      "without acks",
		acksInModel: "with acks",
		acksBeyond:  "with acks, beyond the model (restarted replica promotable before its resync)",
	}[mode]
	pacing := "restarted replica promotable at once"
	if hold {
		pacing = "restarted replica promotable only once in sync"
	}
	return row{
		Store:    "redis",
		Scenario: fmt.Sprintf("failover storm, %s, %s", depName, scenario),
		Trials: fmt.Sprintf("%d processes × %d goroutines, %d keys × %d deliveries over %v, %d promotions (primary SIGKILLed; last at %v; %s)",
			sz.procs, sz.goroutines, sz.keys, sz.deliveries, sz.spread, promoted, lastAt.Round(time.Second), pacing),
		Expected: fmt.Sprint(sz.keys), Observed: fmt.Sprint(execs),
		Notes: fmt.Sprintf("WithReplicaAcks(1, 500ms)+WithClockFences: %v; %d calls failed and were retried (%d unacknowledged claims)",
			acks, retried, events["store_error@claim"]),
		v: v, took: time.Since(start),
	}
}

func pidOf(ctx context.Context, addr string) (int, error) {
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

// cutAndKill cuts the replica off for a moment (SIGSTOP, its replication
// link closed by the primary) while the primary goes on acknowledging
// writes, then SIGKILLs the primary and lets the replica run again.
func cutAndKill(ctx context.Context, primary, replica string) error {
	ppid, err := pidOf(ctx, primary)
	if err != nil {
		return err
	}
	rpid, err := pidOf(ctx, replica)
	if err != nil {
		return err
	}
	if err := syscall.Kill(rpid, syscall.SIGSTOP); err != nil {
		return err
	}
	defer syscall.Kill(rpid, syscall.SIGCONT)
	c := redis.NewClient(&redis.Options{Addr: primary})
	defer c.Close()
	if err := c.ClientKillByFilter(ctx, "TYPE", "replica").Err(); err != nil {
		return err
	}
	time.Sleep(failoverCut)
	return syscall.Kill(ppid, syscall.SIGKILL)
}

func sentinelPrimary(ctx context.Context) (string, error) {
	var last error
	for _, a := range failoverSentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: a, DialTimeout: time.Second})
		m, err := sc.GetMasterAddrByName(ctx, failoverMasterName).Result()
		sc.Close()
		if err == nil && len(m) == 2 {
			return m[0] + ":" + m[1], nil
		}
		last = err
	}
	return "", last
}

// promoteSentinel kills the Sentinel set's primary and has the Sentinels
// promote its replica, then brings the old primary back as a replica;
// with hold, one that is promotable only once it is in sync (settle), and
// the kill waits for the replica to be in sync.
func promoteSentinel(ctx context.Context, hold bool) error {
	primary, err := sentinelPrimary(ctx)
	if err != nil {
		return err
	}
	replica := "127.0.0.1:7201"
	if primary == replica {
		replica = "127.0.0.1:7202"
	}
	if hold {
		if err := inSync(ctx, primary, replica); err != nil {
			return err
		}
	}
	if err := cutAndKill(ctx, primary, replica); err != nil {
		return err
	}
	sc := redis.NewSentinelClient(&redis.Options{Addr: failoverSentinels[0], DialTimeout: time.Second})
	defer sc.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		if p, err := sentinelPrimary(ctx); err == nil && p == replica {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Sentinels did not promote %s", replica)
		}
		_ = sc.Failover(ctx, failoverMasterName).Err() // refused while one runs
		time.Sleep(200 * time.Millisecond)
	}
	if err := failoverScript(hold, "start", "sentinel"); err != nil || !hold {
		return err
	}
	return settle(ctx, "sentinel")
}

// promoteCluster kills a random master of the Cluster and promotes its
// replica with CLUSTER FAILOVER FORCE, then brings the old master back
// (it rejoins as the new master's replica); hold as for promoteSentinel.
func promoteCluster(ctx context.Context, hold bool) error {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: failoverCluster, DialTimeout: time.Second})
	defer cc.Close()
	nodes, err := cc.ClusterNodes(ctx).Result()
	if err != nil {
		return err
	}
	type node struct{ id, addr, master string }
	var masters, replicas []node
	for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		n := node{id: f[0], addr: strings.Split(f[1], "@")[0], master: f[3]}
		// Flags are exact words: "nofailover" (a replica still held, or
		// not yet seen lifted) is not "fail".
		flags := strings.Split(f[2], ",")
		switch {
		case slices.Contains(flags, "fail") || slices.Contains(flags, "fail?"):
		case slices.Contains(flags, "master"):
			masters = append(masters, n)
		case slices.Contains(flags, "slave"):
			replicas = append(replicas, n)
		}
	}
	if len(masters) == 0 {
		return fmt.Errorf("no master in:\n%s", nodes)
	}
	m := masters[rand.N(len(masters))]
	var r node
	for _, x := range replicas {
		if x.master == m.id {
			r = x
		}
	}
	if r.addr == "" {
		return fmt.Errorf("master %s has no replica:\n%s", m.addr, nodes)
	}
	if hold {
		if err := inSync(ctx, m.addr, r.addr); err != nil {
			return err
		}
	}
	if err := cutAndKill(ctx, m.addr, r.addr); err != nil {
		return err
	}
	rc := redis.NewClient(&redis.Options{Addr: r.addr, DialTimeout: time.Second})
	defer rc.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		info, err := rc.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "role:master") {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s was not promoted: %v", r.addr, err)
		}
		_ = rc.Do(ctx, "cluster", "failover", "force").Err()
		time.Sleep(300 * time.Millisecond)
	}
	if err := failoverScript(hold, "start", "cluster"); err != nil || !hold {
		return err
	}
	return settle(ctx, "cluster")
}

// replicationInfo is INFO replication as a map.
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

// syncWait bounds inSync and settle: a full resync of the storm's data
// set takes seconds (after repl-diskless-sync-delay), the Sentinels' view
// of a replica's priority up to their 10s INFO period.
const syncWait = time.Minute

// inSync waits until replica is in sync with primary (inSyncNow).
func inSync(ctx context.Context, primary, replica string) error {
	deadline := time.Now().Add(syncWait)
	for {
		err := inSyncNow(ctx, primary, replica)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", syncWait, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// inSyncNow reports whether replica is primary's replica with its link up,
// no sync in progress, and an offset that has caught up with the
// primary's offset read before it.
func inSyncNow(ctx context.Context, primary, replica string) error {
	host, port, _ := strings.Cut(primary, ":")
	p, err := replicationInfo(ctx, primary)
	if err != nil {
		return err
	}
	r, err := replicationInfo(ctx, replica)
	if err != nil {
		return err
	}
	po, _ := strconv.ParseInt(p["master_repl_offset"], 10, 64)
	ro, _ := strconv.ParseInt(r["slave_repl_offset"], 10, 64)
	if r["role"] == "slave" && r["master_host"] == host && r["master_port"] == port &&
		r["master_link_status"] == "up" && r["master_sync_in_progress"] == "0" && ro >= po {
		return nil
	}
	return fmt.Errorf("replica %s not in sync with %s: role %s of %s:%s, link %s, sync in progress %s, offset %d of %d",
		replica, primary, r["role"], r["master_host"], r["master_port"], r["master_link_status"], r["master_sync_in_progress"], ro, po)
}

// settle brings the deployment back inside the failure model: every
// replica in sync with its primary, and then promotable (replica-priority
// 100, cluster-replica-no-failover no); for Sentinel, once every Sentinel
// agrees on the primary and sees the replica promotable with its link up,
// so that none can pick a replica it still believes unfit, nor one that is
// not in sync. A failover while it waits (one nobody asked for) starts it
// over on the new pair.
func settle(ctx context.Context, dep string) error {
	if dep == "cluster" {
		return settleCluster(ctx)
	}
	deadline := time.Now().Add(syncWait)
	last := ""
	for {
		ok, why := settledSentinel(ctx)
		if ok {
			return nil
		}
		last = why
		if time.Now().After(deadline) {
			return fmt.Errorf("the Sentinel set did not settle in %v: %s", syncWait, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// settledSentinel is one look at the Sentinel set for settle, lifting the
// replica's hold once it is in sync; why says what is still missing.
func settledSentinel(ctx context.Context) (ok bool, why string) {
	primary, err := sentinelPrimary(ctx)
	if err != nil {
		return false, err.Error()
	}
	replica := "127.0.0.1:7201"
	if primary == replica {
		replica = "127.0.0.1:7202"
	}
	if err := inSyncNow(ctx, primary, replica); err != nil {
		return false, err.Error()
	}
	rc := redis.NewClient(&redis.Options{Addr: replica, DialTimeout: time.Second})
	err = rc.ConfigSet(ctx, "replica-priority", "100").Err()
	rc.Close()
	if err != nil {
		return false, err.Error()
	}
	for _, a := range failoverSentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: a, DialTimeout: time.Second})
		m, err1 := sc.GetMasterAddrByName(ctx, failoverMasterName).Result()
		reps, err2 := sc.Replicas(ctx, failoverMasterName).Result()
		sc.Close()
		if err := errors.Join(err1, err2); err != nil {
			return false, fmt.Sprintf("Sentinel %s: %v", a, err)
		}
		if len(m) != 2 || m[0]+":"+m[1] != primary {
			return false, fmt.Sprintf("Sentinel %s has primary %v, not %s", a, m, primary)
		}
		seen := "not listed"
		for _, r := range reps {
			if r["ip"]+":"+r["port"] == replica {
				seen = fmt.Sprintf("priority %s, link %s, flags %s", r["slave-priority"], r["master-link-status"], r["flags"])
				if r["slave-priority"] == "100" && r["master-link-status"] == "ok" && r["flags"] == "slave" {
					seen = ""
				}
			}
		}
		if seen != "" {
			return false, fmt.Sprintf("Sentinel %s sees replica %s: %s", a, replica, seen)
		}
	}
	return true, ""
}

// sentinelDownAfter sets the Sentinels' down-after-milliseconds for the
// set: how long a primary may not answer before a Sentinel calls it down
// (and, with a quorum, fails it over without being asked).
func sentinelDownAfter(ctx context.Context, d time.Duration) error {
	for _, a := range failoverSentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: a, DialTimeout: time.Second})
		err := sc.Set(ctx, failoverMasterName, "down-after-milliseconds", strconv.FormatInt(d.Milliseconds(), 10)).Err()
		sc.Close()
		if err != nil {
			return fmt.Errorf("Sentinel %s: %w", a, err)
		}
	}
	return nil
}

// settleCluster is settle for the Cluster: each replica in sync with its
// master, then allowed to fail over.
func settleCluster(ctx context.Context) error {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: failoverCluster, DialTimeout: time.Second})
	defer cc.Close()
	nodes, err := cc.ClusterNodes(ctx).Result()
	if err != nil {
		return err
	}
	addr := map[string]string{}
	type pair struct{ master, replica string }
	var pairs []pair
	for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr[f[0]] = strings.Split(f[1], "@")[0]
		if strings.Contains(f[2], "slave") {
			pairs = append(pairs, pair{master: f[3], replica: strings.Split(f[1], "@")[0]})
		}
	}
	for _, p := range pairs {
		if err := inSync(ctx, addr[p.master], p.replica); err != nil {
			return err
		}
		rc := redis.NewClient(&redis.Options{Addr: p.replica, DialTimeout: time.Second})
		err := rc.ConfigSet(ctx, "cluster-replica-no-failover", "no").Err()
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
