package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/test/reliability/work"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/test/internal/workerproc"
)

// harness is one test run's shared state: the ledger, the services, and a
// run id that keeps this run's keys, schemas and files apart from any other.
type harness struct {
	runID     string
	ledgerURL string
	pool      *pgxpool.Pool
	ledger    *work.Ledger
	recSchema string // pgstore records of this run
	redisAddr string
	redisErr  error // why Redis is unusable, if it is
	fileDir   string
	full      bool
}

// missing skips (or, under CI=true, fails) a test whose service is down.
func missing(t *testing.T, what string, err error, howto string) {
	t.Helper()
	testenv.Need(t, what, "start it with: "+howto, err)
}

const (
	pgHowTo    = "scripts/base-services.sh (or: service postgresql start), or set IDEM_POSTGRES_URL"
	redisHowTo = "scripts/base-services.sh (or: redis-server --daemonize yes), or set IDEM_REDIS_ADDR"
)

// newHarness connects to the ledger database (required by every scenario:
// it is the side-effect ledger) and to Redis (required by its scenarios).
func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{
		runID:     testenv.RandName(),
		ledgerURL: testenv.PostgresURL(),
		redisAddr: testenv.RedisAddr(),
		fileDir:   t.TempDir(),
		full:      reliabilityFull(),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, h.ledgerURL)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		missing(t, "PostgreSQL (the side-effect ledger of every scenario) at "+h.ledgerURL, err, pgHowTo)
	}
	h.pool = pool
	h.ledger = &work.Ledger{Pool: pool, Schema: "idemrel_" + h.runID}
	h.recSchema = "idemrel_rec_" + h.runID
	if err := h.ledger.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+h.recSchema); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, pool, pgstore.WithSchema(h.recSchema)); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: h.redisAddr})
	h.redisErr = rdb.Ping(ctx).Err()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if h.redisErr == nil {
			iter := rdb.Scan(ctx, 0, h.redisPrefix()+"*", 1000).Iterator()
			var keys []string
			for iter.Next(ctx) {
				keys = append(keys, iter.Val())
			}
			for len(keys) > 0 {
				n := min(len(keys), 500)
				rdb.Del(ctx, keys[:n]...)
				keys = keys[n:]
			}
		}
		rdb.Close()
		if os.Getenv("IDEM_RELIABILITY_KEEP") == "" {
			_ = h.ledger.Drop(ctx)
			_, _ = pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+h.recSchema+` CASCADE`)
		} else {
			t.Logf("kept ledger schema %s and records schema %s", h.ledger.Schema, h.recSchema)
		}
		pool.Close()
	})
	return h
}

func (h *harness) redisPrefix() string { return "idemrel:" + h.runID + ":" }

// needStore skips a store's scenarios when its service is down.
func (h *harness) needStore(t *testing.T, store string) {
	t.Helper()
	if store == "redis" && h.redisErr != nil {
		missing(t, "Redis at "+h.redisAddr, h.redisErr, redisHowTo)
	}
}

// base is a worker configuration for store, talking to the real server
// (addr overrides it: a FaultProxy's address).
func (h *harness) base(store, role string, addr string) workerConfig {
	cfg := workerConfig{
		Role: role, Store: store, FileDir: h.fileDir, RedisPrefix: h.redisPrefix(), PGSchema: h.recSchema,
		LedgerURL: h.ledgerURL, LedgerSchema: h.ledger.Schema,
	}
	switch store {
	case "redis":
		cfg.StoreAddr = h.redisAddr
	case "postgres":
		cfg.StoreAddr = h.ledgerURL
	case "dynamo", "firestore":
		cfg.StoreAddr = docStoreAddr(store)
	}
	if addr != "" {
		if store == "postgres" {
			u, _ := url.Parse(h.ledgerURL)
			u.Host = addr
			cfg.StoreAddr = u.String()
		} else {
			cfg.StoreAddr = addr
		}
	}
	return cfg
}

// pgHostPort is the Postgres server's address, for a FaultProxy in front.
func (h *harness) pgHostPort() string {
	u, err := url.Parse(h.ledgerURL)
	if err != nil || u.Host == "" {
		return "127.0.0.1:5432"
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "5432")
	}
	return u.Host
}

// marker is one progress line of a worker.
type marker struct {
	phase, key string
	fence      uint64
	at         time.Time
}

// proc is a running worker process and the progress markers it printed.
type proc struct {
	*workerproc.Proc
	mu     sync.Mutex
	marks  []marker
	notify chan struct{}
	done   <-chan struct{}
}

// start re-executes the test binary as a worker with cfg.
func (h *harness) start(t *testing.T, cfg workerConfig) *proc {
	t.Helper()
	cfg.Output = workerproc.Output(h.fileDir)
	p := &proc{notify: make(chan struct{}, 1)}
	p.Proc = workerproc.Start(t, workerproc.Spec{Env: workerEnv, Config: cfg, Run: "TestWorkerProcess", Timeout: "10m",
		Output: cfg.Output, Extra: []string{"GOMAXPROCS=2"},
		Line: func(line string) bool {
			f := strings.Fields(line)
			if len(f) != 4 || f[0] != "IDEMREL" {
				return true
			}
			fence, _ := strconv.ParseUint(f[3], 10, 64)
			p.mu.Lock()
			p.marks = append(p.marks, marker{phase: f[1], key: f[2], fence: fence, at: time.Now()})
			p.mu.Unlock()
			select {
			case p.notify <- struct{}{}:
			default:
			}
			return true
		}})
	p.done = p.Done()
	return p
}

// waitMark waits for the first marker of phase (any key when key is "").
func (p *proc) waitMark(phase, key string, timeout time.Duration) (marker, bool) {
	find := func() (marker, bool) {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, m := range p.marks {
			if m.phase == phase && (key == "" || m.key == key) {
				return m, true
			}
		}
		return marker{}, false
	}
	deadline := time.After(timeout)
	for {
		if m, ok := find(); ok {
			return m, true
		}
		select {
		case <-p.notify:
		case <-p.done:
			return find() // what the reader saw before the exit
		case <-deadline:
			return marker{}, false
		}
	}
}

// lastPhase is the last marker of key before the process died.
func (p *proc) lastPhase(key string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	last := ""
	for _, m := range p.marks {
		if m.key == key {
			last = m.phase
		}
	}
	return last
}

func (p *proc) signal(s syscall.Signal) { p.Signal(s) }

// wait waits for the worker to exit and returns its report (on a timeout,
// with a goroutine dump).
func (p *proc) wait(timeout time.Duration) (workerReport, error) {
	var rep workerReport
	return rep, p.Result(timeout, workerproc.Dump, 4000, &rep)
}

func (p *proc) stderrTail() string { return p.StderrTail(4000) }

// shuffled is every key per times, in random order: the deliveries of a
// storm.
func shuffled(keys []string, per int) []string {
	var d []string
	for _, k := range keys {
		for range per {
			d = append(d, k)
		}
	}
	rand.Shuffle(len(d), func(i, j int) { d[i], d[j] = d[j], d[i] })
	return d
}

// numbered is n keys prefix0000 to prefix(n-1).
func numbered(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%04d", prefix, i)
	}
	return keys
}

// startSpread starts n workers of cfg, the deliveries dealt out among
// them in turn.
func (h *harness) startSpread(t *testing.T, n int, deliveries []string, cfg func() workerConfig) []*proc {
	procs := make([]*proc, n)
	for i := range procs {
		c := cfg()
		for j := i; j < len(deliveries); j += n {
			c.Keys = append(c.Keys, deliveries[j])
		}
		procs[i] = h.start(t, c)
	}
	return procs
}

// waitReady waits for every worker's set-up.
func waitReady(v *violations, procs []*proc) {
	for _, p := range procs {
		if _, ok := p.waitMark("ready", "", time.Minute); !ok {
			v.add("worker never became ready: %s", p.stderrTail())
		}
	}
}

// collect waits for the workers and merges their calls and events; each
// (when not nil) sees every worker's report.
func collect(v *violations, procs []*proc, each func(workerReport)) ([]callRecord, map[string]int) {
	var calls []callRecord
	events := map[string]int{}
	for _, p := range procs {
		rep, err := p.wait(5 * time.Minute)
		if err != nil {
			v.add("%v", err)
			continue
		}
		calls = append(calls, rep.Calls...)
		for k, n := range rep.Events {
			events[k] += n
		}
		if each != nil {
			each(rep)
		}
	}
	return calls, events
}

// parallel runs trial for 0 to n-1, at most par at a time.
func parallel(n, par int, trial func(i int)) {
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			trial(i)
		}()
	}
	wg.Wait()
}

// trials runs crashTrials trials, crashParallel at a time, each on its
// own crashKeys keys under prefix.
func trials(sz sizes, prefix string, trial func(n int, keys []string)) {
	parallel(sz.crashTrials, sz.crashParallel, func(n int) {
		var keys []string
		for j := range sz.crashKeys {
			keys = append(keys, fmt.Sprintf("%s%03d/%d", prefix, n, j))
		}
		trial(n, keys)
	})
}

// retry runs a fresh worker of role that calls every key once, all at
// once, and returns its report.
func (h *harness) retry(t *testing.T, store, role string, keys []string) (workerReport, error) {
	cfg := h.base(store, role, "")
	cfg.Keys, cfg.Goroutines = keys, len(keys)
	return h.start(t, cfg).wait(2 * time.Minute)
}

// detected records a negative control's row, which must hold
// violations: without them, the scenario it controls cannot fail.
func detected(t *testing.T, r row, cannot string) {
	t.Helper()
	record(t, r)
	if r.v.n() == 0 {
		t.Fatal(cannot)
	}
	for _, s := range r.v.list {
		t.Logf("detected (as it should be): %s", s)
	}
}

// execRow is one ledger row.
type execRow struct {
	Key         string
	Fence       uint64
	PID         int
	Nonce       string
	Started     time.Time
	Ended       *time.Time
	CtxLive     *bool
	BizAccepted *bool
}

// executions reads the ledger rows of keys starting with prefix.
func (h *harness) executions(t *testing.T, prefix string) map[string][]execRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := h.pool.Query(ctx, `SELECT key, fence, pid, nonce, started_at, ended_at, ctx_live, biz_accepted FROM `+
		h.ledger.Schema+`.executions WHERE starts_with(key, $1) ORDER BY key, fence, id`, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]execRow{}
	for rows.Next() {
		var r execRow
		var fence int64
		if err := rows.Scan(&r.Key, &fence, &r.PID, &r.Nonce, &r.Started, &r.Ended, &r.CtxLive, &r.BizAccepted); err != nil {
			t.Fatal(err)
		}
		r.Fence = uint64(fence)
		out[r.Key] = append(out[r.Key], r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// bizRow is the business row of key.
type bizRow struct {
	Fence uint64
	PID   int
	Nonce string
}

func (h *harness) biz(t *testing.T, prefix string) map[string]bizRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := h.pool.Query(ctx, `SELECT key, fence, pid, nonce FROM `+h.ledger.Schema+`.biz WHERE starts_with(key, $1)`, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bizRow{}
	for rows.Next() {
		var k string
		var fence int64
		var b bizRow
		if err := rows.Scan(&k, &fence, &b.PID, &b.Nonce); err != nil {
			t.Fatal(err)
		}
		b.Fence = uint64(fence)
		out[k] = b
	}
	return out
}

// violations collects what a scenario found wrong.
type violations struct {
	mu   sync.Mutex
	list []string
}

func (v *violations) add(format string, args ...any) {
	v.mu.Lock()
	v.list = append(v.list, fmt.Sprintf(format, args...))
	v.mu.Unlock()
}

func (v *violations) n() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.list)
}

// exactlyOnce checks the ledger under prefix (checkLedger) and that it
// holds exactly one execution for each of keys keys; it returns the
// executions.
func (h *harness) exactlyOnce(t *testing.T, v *violations, prefix string, final map[string]outcomeView, keys int) int {
	execs, re := checkLedger(v, h.executions(t, prefix), final)
	if re > 0 {
		v.add("%d keys executed more than once", re)
	}
	if execs != keys {
		v.add("%d executions, want exactly %d", execs, keys)
	}
	return execs
}

// checkLedger applies the checks every scenario shares to the ledger rows
// of each key and the outcome the key completed with: at most one
// execution per (key, fence); the completed outcome is an execution on
// record; nothing executed after it (no higher fence). It returns the
// number of executions and of keys with more than one.
func checkLedger(v *violations, rows map[string][]execRow, final map[string]outcomeView) (execs, reexecuted int) {
	for key, rs := range rows {
		execs += len(rs)
		if len(rs) > 1 {
			reexecuted++
		}
		seen := map[uint64]int{}
		for _, r := range rs {
			seen[r.Fence]++
			if seen[r.Fence] == 2 {
				v.add("%s: two executions with fence %d (exclusivity broken)", key, r.Fence)
			}
		}
		f, ok := final[key]
		if !ok {
			continue
		}
		found := false
		for _, r := range rs {
			if r.Fence == f.Fence && r.Nonce == f.Nonce {
				found = true
			}
			if r.Fence > f.Fence {
				v.add("%s: execution with fence %d after the completed one (fence %d)", key, r.Fence, f.Fence)
			}
		}
		if !found {
			v.add("%s: completed result (fence %d, nonce %s) matches no execution in the ledger", key, f.Fence, f.Nonce)
		}
	}
	for key := range final {
		if len(rows[key]) == 0 {
			v.add("%s: completed with no execution in the ledger", key)
		}
	}
	return execs, reexecuted
}

// outcomeView is the part of an outcome that identifies its execution.
type outcomeView struct {
	Fence uint64
	PID   int
	Nonce string
}

func view(o work.Outcome) outcomeView { return outcomeView{o.Fence, o.PID, o.Nonce} }

// agree checks that every successful call of a key got the same outcome
// and returns it per key.
func agree(v *violations, calls []callRecord) map[string]outcomeView {
	final := map[string]outcomeView{}
	for _, c := range calls {
		if c.Class != "ok" {
			continue
		}
		got := view(c.Out)
		if prev, ok := final[c.Key]; ok && prev != got {
			v.add("%s: callers got different results: %+v and %+v", c.Key, prev, got)
			continue
		}
		final[c.Key] = got
	}
	return final
}
