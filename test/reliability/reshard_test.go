package reliability

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/test/reliability/work"
)

// Redis Cluster resharding rows: a duplicate storm against a Cluster of
// its own (scripts/redis-reshard.sh: three masters on 7241-7243 and a
// spare node on 7244) while the slots that hold the storm's keys migrate
// between masters, the way redis-cli --cluster reshard moves them
// (CLUSTER SETSLOT IMPORTING on the target, MIGRATING on the source,
// GETKEYSINSLOT and MIGRATE in small batches with pauses, so that each
// slot spends a while split between two nodes, then SETSLOT NODE on every
// master); and, in the second row, while a fourth master joins (CLUSTER
// MEET) and a range of slots, the storm's among them, moves to it.
//
// The storm mixes three guarded functions, each key delivered several
// times by several processes: Storm (duplicates wait for the owner:
// Store.Wait and its shard subscription, which the migration moves),
// Skew (a 2s lease that runs up to 1.5s, so it heartbeats; duplicates
// return ErrInProgress and are asked again) and Steps (a 1s lease and
// three idem.Step recovery points, each recorded by its own script
// call), and Ordered (order=: its claim reads and advances the entity's
// order record in the same script, two keys of one slot, which Redis
// refuses with TRYAGAIN while the slot is split). Every claim, heartbeat, completion, step record and wait read
// meets the slot wherever it is: on the source, redirected to the target
// with ASK once the key has moved, or with MOVED once the slot is the
// target's.
//
// Rules (no faults but the migration, leases heartbeated in time): every
// key runs exactly once (each step of a Steps key once, under the
// completed execution), every caller of a key gets the same result, every
// delivery is answered, no call fails with anything but ErrInProgress
// from Skew's duplicates, none takes longer than reshardStuck; then, the
// migrations over, a fresh process replays every key and gets the
// storm's result.

const (
	reshardHowTo = "bash scripts/redis-reshard.sh start (or make services)"
	// reshardStuck bounds every call: a wait for an owner that runs at
	// most 1.5s, polled every 500ms, on a loaded machine.
	reshardStuck = 20 * time.Second
	// orderedPerEntity is how many events of one entity the ordered keys
	// hold (its order record is advanced by each).
	orderedPerEntity = 3
)

var (
	reshardMasters = []string{"127.0.0.1:7241", "127.0.0.1:7242", "127.0.0.1:7243"}
	reshardSpare   = "127.0.0.1:7244"
	reshardKinds   = []string{"wait", "beat", "steps", "order"}
)

// reshardKind is the function a resharding key is delivered to: the
// segment after the row's prefix ("…/wait/…", "…/beat/…", "…/steps/…",
// "…/order/<entity>/<n>").
func reshardKind(key string) string {
	for _, k := range reshardKinds {
		if strings.Contains(key, "/"+k+"/") {
			return k
		}
	}
	return ""
}

// reshardCall is the reshard role's call: the key's kind picks the
// function.
func reshardCall(fx *work.IdempotentEffects) func(context.Context, string) (work.Outcome, error) {
	return func(ctx context.Context, key string) (work.Outcome, error) {
		switch reshardKind(key) {
		case "wait":
			return fx.Storm(ctx, key)
		case "beat":
			return fx.Skew(ctx, key)
		case "steps":
			return fx.Steps(ctx, key)
		case "order":
			entity, at, err := orderedEvent(key)
			if err != nil {
				return work.Outcome{}, err
			}
			return fx.Ordered(ctx, key, entity, at)
		}
		return work.Outcome{}, fmt.Errorf("reshard: key %q has no kind", key)
	}
}

// orderedEvent is the entity and time of an ordered key
// "…/order/<entity>/<n>": the n-th event of the entity, n seconds after a
// fixed time, the same for every delivery of the key.
func orderedEvent(key string) (entity string, at time.Time, err error) {
	f := strings.Split(key, "/")
	n, err := strconv.Atoi(f[len(f)-1])
	if len(f) < 3 || err != nil {
		return "", at, fmt.Errorf("reshard: %q is not …/order/<entity>/<n>", key)
	}
	return f[len(f)-2], time.Unix(1_700_000_000+int64(n), 0), nil
}

// reshardHold is how long each kind's function runs: Skew past a third
// of its 2s lease (heartbeats), each of Steps' three steps a little.
func reshardHold(key string) time.Duration {
	switch reshardKind(key) {
	case "beat":
		return 700*time.Millisecond + rand.N(800*time.Millisecond)
	case "steps":
		return 30*time.Millisecond + rand.N(120*time.Millisecond)
	}
	return 20*time.Millisecond + rand.N(130*time.Millisecond)
}

// openReshardStore opens a worker's store on the resharding Cluster; ok
// is false for every other store. The client keeps go-redis's defaults
// for redirections (MaxRedirects 3). The store is wrapped in
// countingStore, which counts its successful heartbeats, completions,
// step records and waits.
func openReshardStore(ctx context.Context, cfg workerConfig) (st idemstore.Store, closeFn func(), ok bool, err error) {
	if cfg.Store != "redis-reshard" {
		return nil, nil, false, nil
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cfg.ClusterAddrs,
		PoolSize: 16, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: time.Second})
	s, err := redisstore.New(ctx, rdb, redisstore.WithKeyPrefix(cfg.RedisPrefix),
		redisstore.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))))
	if err != nil {
		rdb.Close()
		return nil, nil, true, err
	}
	return countingStore{s}, func() { s.Close(); rdb.Close() }, true, nil
}

// storeCounts counts, in a worker, the store operations countingStore
// saw succeed; runWorker adds them to its report's events.
var storeCounts = &counter{m: map[string]int{}}

type counter struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counter) add(name string) {
	c.mu.Lock()
	c.m[name]++
	c.mu.Unlock()
}

func (c *counter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.m))
	for k, n := range c.m {
		out[k] = n
	}
	return out
}

// countingStore is the Redis store with its heartbeats, completions, step
// records and waits counted. It embeds *redisstore.Store, so it keeps
// every interface the store implements (idemstore.Stepper, idemstore.Orderer, the
// waiting one) and changes nothing else.
type countingStore struct{ *redisstore.Store }

func (c countingStore) count(name string, err error) error {
	if err == nil {
		storeCounts.add(name)
	}
	return err
}

func (c countingStore) Heartbeat(ctx context.Context, l idemstore.Lease) error {
	return c.count("heartbeat", c.Store.Heartbeat(ctx, l))
}

func (c countingStore) Complete(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	return c.count("completion", c.Store.Complete(ctx, l, r))
}

func (c countingStore) SaveStep(ctx context.Context, l idemstore.Lease, name string, data []byte) error {
	return c.count("step recorded", c.Store.SaveStep(ctx, l, name, data))
}

func (c countingStore) Wait(ctx context.Context, key string) error {
	return c.count("wait", c.Store.Wait(ctx, key))
}

// redirections sums the Cluster's redirections and refusals (ASK, MOVED,
// TRYAGAIN) over addrs, from the servers' own INFO errorstats: every one
// a node answered, whichever client path followed it.
func redirections(ctx context.Context, addrs []string) map[string]int {
	out := map[string]int{}
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a, DialTimeout: time.Second})
		info, err := c.Info(ctx, "errorstats").Result()
		c.Close()
		if err != nil {
			continue // the spare before it joins may be down: counted as 0
		}
		for _, line := range strings.Split(info, "\n") {
			for _, name := range []string{"ASK", "MOVED", "TRYAGAIN"} {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "errorstat_"+name+":count="); ok {
					n, _ := strconv.Atoi(v)
					out[name] += n
				}
			}
		}
	}
	return out
}

// reshardSizes: a storm of keysPerKind keys of each kind in slots slots,
// each delivered deliveries times, spread over spread.
type reshardSizes struct {
	procs, goroutines, keysPerKind, deliveries, slots int
	spread                                            time.Duration
	// batch keys per MIGRATE, pause between the steps of a slot's move.
	batch int
	pause time.Duration
	// once: one migration of each slot (the short version); otherwise the
	// slots keep moving until the storm ends.
	once bool
	// rebalance: slots the rebalance row moves to the new master besides
	// the storm's (0: no rebalance row).
	rebalance int
}

func reshardLevel(full bool) reshardSizes {
	if full {
		return reshardSizes{procs: 3, goroutines: 8, keysPerKind: 50, deliveries: 5, slots: 12, spread: 40 * time.Second,
			batch: 2, pause: 40 * time.Millisecond, rebalance: 1024}
	}
	return reshardSizes{procs: 2, goroutines: 6, keysPerKind: 6, deliveries: 4, slots: 1, spread: 5 * time.Second,
		batch: 1, pause: 150 * time.Millisecond, once: true}
}

// TestReliabilityReshard runs the resharding rows on a Cluster of their
// own, started afresh (scripts/redis-reshard.sh fresh) and stopped at the
// end.
func TestReliabilityReshard(t *testing.T) {
	h := newHarness(t)
	sz := reshardLevel(h.full)
	report.full = h.full
	if _, err := exec.LookPath("redis-server"); err != nil {
		missing(t, "redis-server", err, "apt-get install redis-server")
	}
	if err := reshardScript("fresh"); err != nil {
		missing(t, "the resharding Redis Cluster", err, reshardHowTo)
	}
	t.Cleanup(func() {
		if os.Getenv("IDEM_RELIABILITY_KEEP") != "" {
			t.Logf("kept the resharding Cluster on %v and %s", reshardMasters, reshardSpare)
			return
		}
		if err := reshardScript("stop"); err != nil {
			t.Errorf("stopping the resharding Cluster: %v", err)
		}
	})
	t.Run("migrate", func(t *testing.T) { record(t, h.reshardStorm(t, "migrate", sz)) })
	if sz.rebalance > 0 {
		t.Run("rebalance", func(t *testing.T) { record(t, h.reshardStorm(t, "rebalance", sz)) })
	}
}

func reshardScript(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", append([]string{"../../scripts/redis-reshard.sh"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("redis-reshard.sh %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// reshardKeys picks keysPerKind keys of each kind whose records fall in
// sz.slots random slots; it returns them and their slots.
func (h *harness) reshardKeys(t *testing.T, prefix string, sz reshardSizes) (keys []string, slots []int) {
	t.Helper()
	ctx := context.Background()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: reshardMasters})
	defer rdb.Close()
	st, err := redisstore.New(ctx, rdb, redisstore.WithKeyPrefix(h.redisPrefix()),
		redisstore.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fx := work.NewIdempotentEffects(&work.Effects{}, idem.NewGuard(st))
	keyOf := map[string]func(string) (string, error){"wait": fx.StormKey, "beat": fx.SkewKey, "steps": fx.StepsKey,
		"order": func(k string) (string, error) {
			entity, at, err := orderedEvent(k)
			if err != nil {
				return "", err
			}
			return fx.OrderedKey(k, entity, at)
		}}
	in := map[int]bool{}
	for len(slots) < sz.slots {
		if s := rand.N(16384); !in[s] {
			in[s] = true
			slots = append(slots, s)
		}
	}
	checked := false
	for _, kind := range reshardKinds {
		found := 0
		for n := 0; found < sz.keysPerKind; n++ {
			k := fmt.Sprintf("%s%s/%07d", prefix, kind, n)
			if kind == "order" {
				// orderedPerEntity events of each entity: the entity's
				// tag decides the slot.
				k = fmt.Sprintf("%sorder/e%07d/0", prefix, n)
			}
			sk, err := keyOf[kind](k)
			if err != nil {
				t.Fatal(err)
			}
			rk := st.RecordKey(sk)
			slot := crc16Slot(rk)
			if !checked {
				// crc16Slot agrees with the server.
				want, err := rdb.ClusterKeySlot(ctx, rk).Result()
				if err != nil || int64(slot) != want {
					t.Fatalf("slot of %q: %d, CLUSTER KEYSLOT says %d (%v)", rk, slot, want, err)
				}
				checked = true
			}
			switch {
			case !in[slot]:
			case kind == "order":
				for j := 0; j < orderedPerEntity && found < sz.keysPerKind; j++ {
					keys = append(keys, fmt.Sprintf("%sorder/e%07d/%d", prefix, n, j))
					found++
				}
			default:
				keys = append(keys, k)
				found++
			}
		}
	}
	return keys, slots
}

// crc16Slot is Redis Cluster's hash slot of key (CRC16-XMODEM of the key,
// or of its hash tag, modulo 16384).
func crc16Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

// rnode is one master of the resharding Cluster.
type rnode struct {
	addr, id string
	c        *redis.Client
}

// resharder moves slots between the Cluster's masters and counts what it
// did.
type resharder struct {
	masters []*rnode
	owner   map[int]*rnode
	batch   int

	moves, keys int
	splitFor    time.Duration // total time slots spent in migration
}

func newResharder(ctx context.Context, addrs []string, batch int) (*resharder, error) {
	r := &resharder{owner: map[int]*rnode{}, batch: batch}
	for _, a := range addrs {
		if err := r.add(ctx, a); err != nil {
			r.close()
			return nil, err
		}
	}
	return r, r.readSlots(ctx)
}

func (r *resharder) add(ctx context.Context, addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 2 * time.Second})
	id, err := c.ClusterMyID(ctx).Result()
	if err != nil {
		c.Close()
		return fmt.Errorf("CLUSTER MYID of %s: %w", addr, err)
	}
	r.masters = append(r.masters, &rnode{addr: addr, id: id, c: c})
	return nil
}

func (r *resharder) close() {
	for _, n := range r.masters {
		n.c.Close()
	}
}

// readSlots reads which master owns every slot (CLUSTER SHARDS).
func (r *resharder) readSlots(ctx context.Context) error {
	shards, err := r.masters[0].c.ClusterShards(ctx).Result()
	if err != nil {
		return err
	}
	for _, sh := range shards {
		var n *rnode
		for _, nd := range sh.Nodes {
			if nd.Role == "master" {
				n = r.byAddr(net.JoinHostPort(nd.IP, strconv.FormatInt(nd.Port, 10)))
			}
		}
		if n == nil && len(sh.Slots) > 0 {
			return fmt.Errorf("slots %v are served by no known master: %+v", sh.Slots, sh.Nodes)
		}
		for _, sr := range sh.Slots {
			for slot := sr.Start; slot <= sr.End; slot++ {
				r.owner[int(slot)] = n
			}
		}
	}
	return nil
}

func (r *resharder) byAddr(addr string) *rnode {
	for _, n := range r.masters {
		if n.addr == addr {
			return n
		}
	}
	return nil
}

// move migrates slot from its owner to dst as redis-cli --cluster reshard
// does, pausing between its steps so that the slot stays split between
// the two nodes for a while under load (the storm's slots; others move
// without pauses). MIGRATE without REPLACE: a key
// that existed on both nodes would fail it (BUSYKEY), which is reported.
func (r *resharder) move(ctx context.Context, slot int, dst *rnode, pause time.Duration) error {
	src := r.owner[slot]
	if src == nil || src == dst {
		return nil
	}
	start := time.Now()
	defer func() { r.splitFor += time.Since(start) }()
	if err := dst.c.Do(ctx, "cluster", "setslot", slot, "importing", src.id).Err(); err != nil {
		return fmt.Errorf("slot %d: SETSLOT IMPORTING on %s: %w", slot, dst.addr, err)
	}
	if err := src.c.Do(ctx, "cluster", "setslot", slot, "migrating", dst.id).Err(); err != nil {
		return fmt.Errorf("slot %d: SETSLOT MIGRATING on %s: %w", slot, src.addr, err)
	}
	host, port, _ := net.SplitHostPort(dst.addr)
	for {
		time.Sleep(pause)
		keys, err := src.c.ClusterGetKeysInSlot(ctx, slot, r.batch).Result()
		if err != nil {
			return fmt.Errorf("slot %d: GETKEYSINSLOT on %s: %w", slot, src.addr, err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"migrate", host, port, "", 0, 5000, "keys"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := src.c.Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("slot %d: MIGRATE %d keys from %s to %s: %w", slot, len(keys), src.addr, dst.addr, err)
		}
		r.keys += len(keys)
	}
	// The target first, then the source, then the others.
	order := []*rnode{dst, src}
	for _, n := range r.masters {
		if n != dst && n != src {
			order = append(order, n)
		}
	}
	for _, n := range order {
		if err := n.c.Do(ctx, "cluster", "setslot", slot, "node", dst.id).Err(); err != nil {
			return fmt.Errorf("slot %d: SETSLOT NODE %s on %s: %w", slot, dst.addr, n.addr, err)
		}
	}
	r.owner[slot] = dst
	r.moves++
	return nil
}

// join adds the spare node as a master (CLUSTER MEET) and waits until
// every master knows it and it knows the slot map.
func (r *resharder) join(ctx context.Context, addr string) (*rnode, error) {
	host, port, _ := net.SplitHostPort(addr)
	if err := r.masters[0].c.ClusterMeet(ctx, host, port).Err(); err != nil {
		return nil, fmt.Errorf("CLUSTER MEET %s: %w", addr, err)
	}
	if err := r.add(ctx, addr); err != nil {
		return nil, err
	}
	n := r.masters[len(r.masters)-1]
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok := true
		for _, m := range r.masters {
			info, err := m.c.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(r.masters))) ||
				!strings.Contains(info, "cluster_state:ok") {
				ok = false
			}
		}
		if ok {
			return n, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s did not join: not every master knows %d nodes after 30s", addr, len(r.masters))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (h *harness) reshardStorm(t *testing.T, variant string, sz reshardSizes) row {
	ctx := context.Background()
	prefix := fmt.Sprintf("redis-reshard/%s/", variant)
	keys, slots := h.reshardKeys(t, prefix, sz)
	deliveries := shuffled(keys, sz.deliveries)
	rs, err := newResharder(ctx, reshardMasters, sz.batch)
	if err != nil {
		t.Fatalf("the resharding Cluster: %v", err)
	}
	defer rs.close()
	nodes := append(slices.Clone(reshardMasters), reshardSpare)
	before := redirections(ctx, nodes)
	start := time.Now()
	cfg := func() workerConfig {
		c := h.base("redis", "reshard", "")
		c.Store, c.StoreAddr, c.ClusterAddrs = "redis-reshard", "", reshardMasters
		c.Goroutines, c.Spread, c.RetryErrors = sz.goroutines, sz.spread, true
		c.Deadline, c.CallTimeout = sz.spread+3*time.Minute, time.Minute
		return c
	}
	procs := h.startSpread(t, sz.procs, deliveries, cfg)
	v := &violations{}
	waitReady(v, procs)
	// The resharding, while the workers run.
	done := make(chan struct{})
	go func() {
		for _, p := range procs {
			<-p.done
		}
		close(done)
	}()
	running := func() bool {
		select {
		case <-done:
			return false
		default:
			return true
		}
	}
	var what string
	time.Sleep(sz.spread / 5) // calls under way, some keys finished
	switch variant {
	case "migrate":
		rounds := 0
		for rounds == 0 || !sz.once && running() && v.n() == 0 {
			for _, slot := range slots {
				others := slices.DeleteFunc(slices.Clone(rs.masters), func(n *rnode) bool { return n == rs.owner[slot] })
				if err := rs.move(ctx, slot, others[rand.N(len(others))], sz.pause); err != nil {
					v.add("migration: %v", err)
					break
				}
			}
			if rounds == 0 && !running() {
				v.add("the storm ended before the first round of migrations did (%v): they did not all run under load", time.Since(start).Round(time.Millisecond))
			}
			rounds++
		}
		what = fmt.Sprintf("%d migrations of the storm's %d slot(s) between 3 masters (%d rounds)", rs.moves, len(slots), rounds)
	case "rebalance":
		n, err := rs.join(ctx, reshardSpare)
		if err != nil {
			v.add("rebalance: %v", err)
			break
		}
		joined := time.Since(start)
		// The storm's slots and sz.rebalance more, an equal share from each
		// old master, in random order.
		move := slices.Clone(slots)
		for _, m := range rs.masters[:3] {
			var own []int
			for s, o := range rs.owner {
				if o == m && !slices.Contains(slots, s) {
					own = append(own, s)
				}
			}
			slices.Sort(own)
			mid := len(own)/2 - sz.rebalance/6
			move = append(move, own[mid:mid+sz.rebalance/3]...)
		}
		rand.Shuffle(len(move), func(i, j int) { move[i], move[j] = move[j], move[i] })
		for _, slot := range move {
			pause := time.Duration(0)
			if slices.Contains(slots, slot) {
				pause = sz.pause
			}
			if err := rs.move(ctx, slot, n, pause); err != nil {
				v.add("rebalance: %v", err)
				break
			}
		}
		if !running() {
			v.add("the storm ended before the rebalance did (%v): it did not run under load", time.Since(start).Round(time.Millisecond))
		}
		what = fmt.Sprintf("a 4th master joined at %v (CLUSTER MEET), then %d slots moved to it (the storm's %d among them) by %v",
			joined.Round(100*time.Millisecond), rs.moves, len(slots), time.Since(start).Round(100*time.Millisecond))
	}
	calls, events := collect(v, procs, nil)
	stormCalls := len(calls)
	redirected := redirections(ctx, nodes)
	for k, n := range before {
		redirected[k] -= n
	}
	// The migrations over, a fresh process replays every key once.
	vc := cfg()
	vc.Keys, vc.Spread, vc.RetryErrors = keys, 0, false
	vrep, err := h.start(t, vc).wait(2 * time.Minute)
	replayed := 0
	if err != nil {
		v.add("replay pass: %v", err)
	} else {
		for _, c := range vrep.Calls {
			if c.Class == "ok" {
				replayed++
			} else {
				v.add("%s: replay after the resharding failed: %s", c.Key, c.Err)
			}
		}
		calls = append(calls, vrep.Calls...)
		for k, n := range vrep.Events {
			events[k] += n
		}
	}
	// Calls: every delivery answered; no error but Skew's in-progress
	// answers; none stuck.
	answered := map[string]int{}
	inProgress, slowest := 0, time.Duration(0)
	for _, c := range calls[:stormCalls] {
		d := c.End.Sub(c.Start)
		slowest = max(slowest, d)
		if d > reshardStuck {
			v.add("%s: stuck: a call took %v (bound %v)", c.Key, d.Round(time.Millisecond), reshardStuck)
		}
		switch {
		case c.Class == "ok":
			answered[c.Key]++
		case c.Class == "in_progress" && reshardKind(c.Key) == "beat":
			inProgress++
		default:
			v.add("%s: a call failed during the resharding: %s: %s", c.Key, c.Class, c.Err)
		}
	}
	for _, k := range keys {
		if answered[k] != sz.deliveries {
			v.add("%s: %d of %d deliveries answered", k, answered[k], sz.deliveries)
		}
	}
	final := agree(v, calls)
	// The ledger: each key once; each step of a Steps key once, by the
	// execution whose result the callers got.
	rows := h.executions(t, prefix)
	plain, plainFinal := map[string][]execRow{}, map[string]outcomeView{}
	execs := 0
	for _, k := range keys {
		if reshardKind(k) == "steps" {
			f, ok := final[k]
			for _, step := range work.StepNames {
				rs := rows[work.StepLedgerKey(k, step)]
				execs += len(rs)
				switch {
				case len(rs) != 1:
					v.add("%s: step %s ran %d times, want once", k, step, len(rs))
				case ok && (rs[0].Fence != f.Fence || rs[0].Nonce != f.Nonce):
					v.add("%s: step %s ran under fence %d (nonce %s), not under the completed execution's %d (%s)", k, step, rs[0].Fence, rs[0].Nonce, f.Fence, f.Nonce)
				}
			}
			continue
		}
		plain[k] = rows[k]
		if f, ok := final[k]; ok {
			plainFinal[k] = f
		}
		if n := len(rows[k]); n != 1 {
			v.add("%s: %d executions, want exactly 1", k, n)
		}
	}
	n, _ := checkLedger(v, plain, plainFinal)
	execs += n
	want := sz.keysPerKind*(len(reshardKinds)-1) + sz.keysPerKind*len(work.StepNames)
	return row{
		Store: "redis",
		Scenario: map[string]string{
			"migrate":   "resharding storm, Cluster: slots migrated under load (SETSLOT MIGRATING/IMPORTING, MIGRATE)",
			"rebalance": "resharding storm, Cluster: rebalance adding a master (CLUSTER MEET, slots moved to it)",
		}[variant],
		Trials: fmt.Sprintf("%d processes × %d goroutines, %d keys (%d each: waiting duplicates, heartbeating, 3 steps, ordered events of %d per entity) in %d slot(s) × %d deliveries over %v; %s",
			sz.procs, sz.goroutines, len(keys), sz.keysPerKind, orderedPerEntity, len(slots), sz.deliveries, sz.spread, what),
		Expected: fmt.Sprintf("%d (one per key, one per step)", want),
		Observed: fmt.Sprint(execs),
		Notes: fmt.Sprintf("%d keys MIGRATEd %d at a time, slots split between two masters for %v in all; redirections and refusals the nodes answered during the storm (INFO errorstats): %s; store calls that succeeded: %s; duplicates answered in_progress %d; slowest call %v; then a fresh process replayed %d/%d keys with the storm's results",
			rs.keys, sz.batch, rs.splitFor.Round(100*time.Millisecond),
			fmtCounts(pick(redirected, "ASK", "MOVED", "TRYAGAIN")), fmtCounts(pick(events, "heartbeat", "completion", "step recorded", "wait")),
			inProgress, slowest.Round(time.Millisecond), replayed, len(keys)),
		v: v, took: time.Since(start),
	}
}
