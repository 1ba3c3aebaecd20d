package idemkafka_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/idemgen/idemgen/internal/stormtest"
	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemcall"
	"github.com/idemgen/idemgen/runtime/idemkafka"
	"github.com/idemgen/idemgen/runtime/idemqueue"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

const (
	kafkaHint = "Start the Kafka-protocol broker: scripts/kafka.sh (make services), or set IDEM_KAFKA_BROKERS."
	redisHint = "Start Redis: redis-server --port 6379, or set IDEM_REDIS_ADDR."
	// kfakeVersion is the broker tools/kfake builds, for the report.
	kfakeVersion = "v0.0.0-20260918054303-01f206a7e32c"
)

// brokers is IDEM_KAFKA_BROKERS (comma-separated), by default the kfake
// cluster scripts/kafka.sh starts.
func brokers() []string {
	return strings.Split(testenv.Env("IDEM_KAFKA_BROKERS", "127.0.0.1:9092"), ",")
}

// needKafka dials the first broker: skip (or fail under CI=true) when none
// answers.
func needKafka(t testing.TB) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", brokers()[0], 2*time.Second)
	if err == nil {
		conn.Close()
	}
	testenv.Need(t, "the Kafka broker at "+brokers()[0], kafkaHint, err)
}

func needRedis(t testing.TB) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr()})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := rdb.Ping(ctx).Err()
	if err != nil {
		rdb.Close()
	}
	testenv.Need(t, "Redis at "+testenv.RedisAddr(), redisHint, err)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// TestMain lets the test binary double as a storm worker process.
func TestMain(m *testing.M) { stormtest.Main(m, runWorker) }

// workerConfig is what the storm tells one consumer process.
type workerConfig struct {
	Brokers   []string
	Topic     string
	Group     string
	RedisAddr string
	Prefix    string // Redis key prefix of the run: the store's records and the ledger
	// PGURL set: the store is pgstore in Schema, and the side effect is a
	// ledger row inserted in the transaction that completes the
	// idempotency record (pgstore.InTx), so a kill can land anywhere.
	PGURL, Schema string
	HoldMin       time.Duration
	HoldMax       time.Duration
	Lease         time.Duration
	// BlockAfter > 0: the handler of this process's BlockAfter-th record
	// prints BLOCKED and never returns (the storm SIGKILLs the process
	// there: mid-handler, lease held, before the side effect).
	BlockAfter int
	// PositionIDs keys messages by idemkafka.PositionID instead of the
	// idempotency-key header (the self-test: duplicate sends then run
	// twice).
	PositionIDs bool
}

// runWorker is one consumer process: idemkafka over redisstore, the side
// effect counting the message ID in a Redis ledger hash; or, with
// cfg.PGURL, over pgstore with the ledger row in the record's transaction.
func runWorker(ctx context.Context, cfg workerConfig) error {
	q, effect, done, err := openWorkerStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	var mu sync.Mutex
	// A SIGKILL between a Redis side effect and the store's record of it
	// is the window idemqueue documents as unclosable from outside (the
	// effect is not in the store's transaction): on Redis the victim
	// freezes new effects and waits until none is between its effect and
	// its outcome before it reports BLOCKED, so every kill lands inside
	// handlers and before their effects. On PostgreSQL the effect commits
	// with the record, and the victim blocks at once.
	var (
		handled  int
		freeze   bool
		inWindow = map[string]bool{}
	)
	pos := func(r *kgo.Record) string { return fmt.Sprintf("%d/%d", r.Partition, r.Offset) }
	h := func(ctx context.Context, r *kgo.Record) error {
		id := string(r.Key)
		mu.Lock()
		handled++
		n := handled
		mu.Unlock()
		if cfg.BlockAfter > 0 && n == cfg.BlockAfter {
			wait := cfg.PGURL == ""
			mu.Lock()
			freeze = wait
			mu.Unlock()
			for wait {
				mu.Lock()
				open := len(inWindow)
				mu.Unlock()
				if open == 0 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			stormtest.Say("BLOCKED %s %d %d", id, r.Partition, r.Offset)
			<-make(chan struct{}) // until SIGKILL
		}
		select {
		case <-time.After(stormtest.Hold(cfg.HoldMin, cfg.HoldMax)):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		mu.Lock()
		if freeze {
			mu.Unlock()
			<-make(chan struct{}) // until SIGKILL, before the effect
		}
		inWindow[pos(r)] = true
		mu.Unlock()
		return effect(ctx, r)
	}
	idOpt := idemkafka.WithMessageID(idemkafka.HeaderID(idemkafka.DefaultIDHeaders...))
	if cfg.PositionIDs {
		idOpt = idemkafka.WithMessageID(idemkafka.PositionID)
	}
	c, err := idemkafka.New(q, h,
		idemkafka.WithBrokers(cfg.Brokers...), idemkafka.WithGroup(cfg.Group), idemkafka.WithTopics(cfg.Topic),
		idemkafka.WithClientOptions(
			kgo.SessionTimeout(3*time.Second), kgo.HeartbeatInterval(300*time.Millisecond),
			kgo.RebalanceTimeout(10*time.Second), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		),
		idOpt,
		idemkafka.WithCommitInterval(200*time.Millisecond),
		idemkafka.WithRevokeWait(time.Second),
		idemkafka.WithRetryBackoff(50*time.Millisecond, time.Second),
		idemkafka.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))),
		idemkafka.WithOutcome(func(o idemkafka.Outcome) {
			mu.Lock()
			delete(inWindow, pos(o.Record))
			mu.Unlock()
			stormtest.Say("OUT %s %s %d %d %d", o.ID, o.Status, o.Attempt, o.Record.Partition, o.Record.Offset)
		}))
	if err != nil {
		return err
	}
	stormtest.Say("READY %d", os.Getpid())
	return c.Run(ctx)
}

// openWorkerStore opens a worker's store and its idemqueue consumer, and
// returns the handler's side effect for a record, on Redis or PostgreSQL
// (cfg.PGURL); done closes what it opened.
func openWorkerStore(ctx context.Context, cfg workerConfig) (*idemqueue.Consumer, func(context.Context, *kgo.Record) error, func(), error) {
	if cfg.PGURL != "" {
		st, q, done, err := stormtest.OpenPG(ctx, stormtest.PGWorker{PGURL: cfg.PGURL, Lease: cfg.Lease},
			pgxpool.New, pgstore.New, pgstore.WithSchema(cfg.Schema))
		effect := func(ctx context.Context, r *kgo.Record) error {
			_, err := pgstore.InTx(ctx, st, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) (pgconn.CommandTag, error) {
				return tx.Exec(ctx, stormtest.LedgerInsert(cfg.Schema), stormtest.LedgerArgs(ctx, string(r.Key))...)
			})
			return err
		}
		return q, effect, done, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: cfg.RedisAddr})
	st, err := redisstore.New(ctx, rdb, redisstore.WithKeyPrefix(cfg.Prefix+"store:"))
	if err != nil {
		rdb.Close()
		return nil, nil, nil, err
	}
	q := idemqueue.New(idem.NewGuard(st), idemcall.WithName("storm"), idemcall.WithLease(cfg.Lease))
	effect := func(ctx context.Context, r *kgo.Record) error {
		id := string(r.Key)
		fence, _ := idem.FenceFrom(ctx)
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HIncrBy(ctx, cfg.Prefix+"ledger", id, 1)
			p.RPush(ctx, cfg.Prefix+"log:"+id, fmt.Sprintf("pid=%d fence=%d partition=%d offset=%d", os.Getpid(), fence, r.Partition, r.Offset))
			return nil
		})
		return err
	}
	return q, effect, func() { st.Close(); rdb.Close() }, nil
}

// stormSize is the storm's shape: short in make test, bigger with
// IDEM_RELIABILITY=full.
type stormSize struct {
	Messages, DupSends, Workers, Kills, Leaves int
	HoldMin, HoldMax                           time.Duration
	Timeout                                    time.Duration
}

func sizeFromEnv() stormSize {
	if stormtest.Full() {
		return stormSize{Messages: 5000, DupSends: 500, Workers: 4, Kills: 4, Leaves: 4,
			HoldMin: time.Millisecond, HoldMax: 10 * time.Millisecond, Timeout: 10 * time.Minute}
	}
	return stormSize{Messages: 300, DupSends: 30, Workers: 3, Kills: 1, Leaves: 1,
		HoldMin: 2 * time.Millisecond, HoldMax: 20 * time.Millisecond, Timeout: 3 * time.Minute}
}

type proc struct {
	*stormtest.Proc
	n int

	// For the storm's diagnostics; touched by the storm's goroutine only.
	blockAfter int       // > 0: a victim
	started    time.Time // when the process was started
	signal     string    // "KILL" or "TERM" once the storm signalled it
	signalled  time.Time
	outs, ran  int       // outcome lines, and of them status ran
	last       time.Time // its last line
	ready      bool      // it printed READY
	blocked    bool      // it printed BLOCKED
}

type event struct {
	proc    int
	kind    string // READY, BLOCKED, OUT
	id      string
	status  string
	attempt int
	pos     string // partition/offset of the record (OUT, BLOCKED)
}

// TestRedeliveryStorm produces messages with stable IDs (and duplicate
// sends of some), consumes them with several consumer processes in one
// group over one store, SIGKILLs consumers inside a handler and makes
// others leave and join, and checks in the ledger (written by the handler
// as its side effect) that every message ID was applied exactly once, and
// that the group's committed offsets reach the end of every partition. It
// runs over Redis (the ledger a Redis hash beside the store) and over
// PostgreSQL, where the ledger row and the idempotency record commit in
// one transaction (pgstore.InTx): exactly-once with PostgreSQL.
func TestRedeliveryStorm(t *testing.T) {
	for _, tc := range []struct{ store, row string }{
		{"redis", "Redis store, ledger in Redis"},
		{"postgres", "PostgreSQL store, ledger row in the record's transaction"},
	} {
		t.Run(tc.store, func(t *testing.T) {
			size := sizeFromEnv()
			res := storm(t, size, tc.store, false)
			if diff := cmp.Diff(stormtest.Summary{Effects: size.Messages + res.fills}, res.summary); diff != "" {
				t.Errorf("side effects per message ID (-want +got):\n%s\nduplicated: %v\nlost: %v", diff, res.dupIDs, res.lostIDs)
			}
			if res.dupStatus < size.DupSends {
				t.Errorf("%d Duplicate outcomes, want at least the %d duplicate sends", res.dupStatus, size.DupSends)
			}
			if res.kills > 0 && res.redeliveries <= 0 {
				t.Errorf("%d kills but no redelivery observed: the storm did not force any", res.kills)
			}
			stormtest.Report(t, stormtest.Row{Broker: "Kafka protocol (kfake " + kfakeVersion + ", franz-go kgo); " + tc.row,
				Messages: size.Messages + res.fills, DupSends: size.DupSends,
				Forced:      fmt.Sprintf("%d SIGKILLs mid-handler, %d leaves/joins (rebalances)", res.kills, res.leaves),
				Redelivered: res.redeliveries, Effects: res.summary.Effects, Dups: res.summary.Duplicates, Lost: res.summary.Lost,
				Notes: fmt.Sprintf("%d consumer processes; %d filler messages for the last victims; %s; %v",
					res.starts, res.fills, runtime.Version(), res.took.Round(100*time.Millisecond))})
		})
	}
}

// TestRedeliveryStormPositionID is the storm's self-test: keyed by
// PositionID, a producer's duplicate send is a new message, so the ledger
// must show exactly the duplicate sends as duplicated side effects (and
// the storm's check is shown able to fail).
func TestRedeliveryStormPositionID(t *testing.T) {
	size := stormSize{Messages: 100, DupSends: 10, Workers: 2, Leaves: 1,
		HoldMin: time.Millisecond, HoldMax: 5 * time.Millisecond, Timeout: 2 * time.Minute}
	res := storm(t, size, "redis", true)
	want := stormtest.Summary{Effects: size.Messages + size.DupSends, Duplicates: size.DupSends}
	if diff := cmp.Diff(want, res.summary); diff != "" {
		t.Errorf("PositionID storm (-want +got):\n%s", diff)
	}
}

type stormResult struct {
	summary                         stormtest.Summary
	dupIDs, lostIDs                 []string
	kills, leaves                   int
	redeliveries, dupStatus, starts int
	fills                           int // filler messages (messages beyond size.Messages)
	took                            time.Duration
}

// stormLedger is where a storm's workers keep their records and write
// their side effects.
type stormLedger struct {
	worker func(*workerConfig)    // points a worker at the store and the ledger
	counts func() map[string]int  // side effects per message ID so far
	log    func(id string) string // how id's side effects were applied
}

// newLedger is the store and ledger of a storm's run: "redis", the store
// and a ledger hash under a prefix of the run on the machine's Redis;
// "postgres", pgstore and a ledger table in a schema of the run.
func newLedger(ctx context.Context, t *testing.T, store, run string) stormLedger {
	if store == "postgres" {
		schema := "idemkafka_storm_" + run
		pool, err := pgxpool.New(ctx, testenv.PostgresURL())
		counts := stormtest.NeedLedger(ctx, t, pool, err, schema, func(ctx context.Context) error {
			return pgstore.Migrate(ctx, pool, pgstore.WithSchema(schema))
		})
		return stormLedger{
			worker: func(c *workerConfig) { c.PGURL, c.Schema = testenv.PostgresURL(), schema },
			counts: counts,
			log: func(id string) string {
				var s string
				pool.QueryRow(context.Background(), `SELECT string_agg(format('pid=%s fence=%s at=%s', pid, fence, at), '; ') FROM "`+schema+`".ledger WHERE id = $1`, id).Scan(&s) //nolint:errcheck
				return s
			},
		}
	}
	rdb := needRedis(t)
	prefix := "idemkafka-storm:" + run + ":"
	t.Cleanup(func() {
		keys, _ := rdb.Keys(context.Background(), prefix+"*").Result()
		for i := 0; i < len(keys); i += 500 {
			rdb.Del(context.Background(), keys[i:min(i+500, len(keys))]...)
		}
	})
	return stormLedger{
		worker: func(c *workerConfig) { c.RedisAddr, c.Prefix = testenv.RedisAddr(), prefix },
		counts: func() map[string]int {
			m, err := rdb.HGetAll(context.Background(), prefix+"ledger").Result()
			if err != nil {
				t.Fatal(err)
			}
			counts := map[string]int{}
			for id, c := range m {
				counts[id], _ = strconv.Atoi(c)
			}
			return counts
		},
		log: func(id string) string {
			log, _ := rdb.LRange(context.Background(), prefix+"log:"+id, 0, -1).Result()
			return strings.Join(log, "; ")
		},
	}
}

// fillBatch is how many filler messages the producer sends every 50ms
// while a kill is due after the sends; maxFills bounds them.
const fillBatch = 6

func maxFills(size stormSize) int { return max(size.Messages, 2000) }

type produceResult struct {
	fills []string // the filler message IDs sent after the sends
	err   error
}

// storm runs the storm over store ("redis" or "postgres").
func storm(t *testing.T, size stormSize, store string, positionIDs bool) stormResult {
	t.Helper()
	needKafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), size.Timeout)
	defer cancel()

	run := testenv.RandName()
	topic, group := "idemkafka-storm-"+run, "storm-"+run
	led := newLedger(ctx, t, store, run)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers()...), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, topic); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}

	// The producer: every message once, DupSends of them twice (a
	// producer retry: same key, ID header and value, a new offset), at a
	// pace that keeps records arriving through the rebalances.
	ids := make([]string, size.Messages)
	for i := range ids {
		ids[i] = fmt.Sprintf("msg-%05d", i)
	}
	var sends []string
	sends = append(sends, ids...)
	for _, i := range rand.Perm(size.Messages)[:size.DupSends] {
		sends = append(sends, ids[i])
	}
	rand.Shuffle(len(sends)-size.Messages/2, func(i, j int) {
		sends[size.Messages/2+i], sends[size.Messages/2+j] = sends[size.Messages/2+j], sends[size.Messages/2+i]
	})
	// A victim is killed inside its BlockAfter-th handler run, so it needs
	// records that nobody has processed yet: while a kill is still due
	// after the sends, the producer goes on with filler messages (new IDs,
	// sent once, checked in the ledger like the others) until the
	// victims have blocked. Without them a victim that joins once the
	// backlog is consumed waits for ever and the storm never ends.
	killsDone := make(chan struct{})
	if size.Kills == 0 {
		close(killsDone)
	}
	produced := make(chan produceResult, 1)
	go func() {
		const batch = 25
		send := func(ids []string) error {
			var rs []*kgo.Record
			for _, id := range ids {
				credit := strings.TrimPrefix(strings.TrimPrefix(id, "msg-"), "fill-")
				rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(id), Value: []byte(`{"credit":` + credit + `}`),
					Headers: []kgo.RecordHeader{{Key: "idempotency-key", Value: []byte(id)}}})
			}
			return cl.ProduceSync(ctx, rs...).FirstErr()
		}
		for i := 0; i < len(sends); i += batch {
			if err := send(sends[i:min(i+batch, len(sends))]); err != nil {
				produced <- produceResult{err: err}
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		var fills []string
		for {
			select {
			case <-killsDone:
				produced <- produceResult{fills: fills}
				return
			case <-ctx.Done():
				produced <- produceResult{fills: fills, err: context.Cause(ctx)}
				return
			default:
			}
			if len(fills) >= maxFills(size) {
				produced <- produceResult{fills: fills, err: fmt.Errorf("%d filler messages and the victims have not all blocked", len(fills))}
				return
			}
			var b []string
			for range fillBatch {
				b = append(b, fmt.Sprintf("fill-%05d", len(fills)+len(b)))
			}
			if err := send(b); err != nil {
				produced <- produceResult{fills: fills, err: err}
				return
			}
			fills = append(fills, b...)
			time.Sleep(50 * time.Millisecond)
		}
	}()

	events := make(chan event, 1024)
	var procs []*proc
	start := func(blockAfter int) *proc {
		cfg := workerConfig{Brokers: brokers(), Topic: topic, Group: group,
			HoldMin: size.HoldMin, HoldMax: size.HoldMax, Lease: 2 * time.Second, BlockAfter: blockAfter, PositionIDs: positionIDs}
		led.worker(&cfg)
		p := &proc{n: len(procs), blockAfter: blockAfter, started: time.Now()}
		procs = append(procs, p)
		p.Proc = stormtest.Start(t, cfg, func(line string) {
			f := strings.Fields(line)
			if len(f) == 0 {
				return
			}
			e := event{proc: p.n, kind: f[0]}
			switch {
			case f[0] == "BLOCKED" && len(f) == 4:
				e.id, e.pos = f[1], f[2]+"/"+f[3]
			case f[0] == "OUT" && len(f) == 6:
				e.id, e.status = f[1], f[2]
				e.attempt, _ = strconv.Atoi(f[3])
				e.pos = f[4] + "/" + f[5]
			case f[0] == "READY":
			default:
				return
			}
			select {
			case events <- e:
			case <-ctx.Done():
			}
		})
		return p
	}

	// The first worker is a victim: it blocks in a handler early and is
	// killed there; every kill brings a new victim until Kills is reached.
	kills, leaves := 0, 0
	blockAfter := func() int {
		if kills < size.Kills {
			return 20 + rand.IntN(size.Messages/(4*size.Workers)+1)
		}
		return 0
	}
	var victim *proc
	if ba := blockAfter(); ba > 0 {
		victim = start(ba)
	} else {
		start(0)
	}
	for range size.Workers - 1 {
		start(0)
	}

	var outs []event
	alive := func() []*proc {
		var ps []*proc
		for _, p := range procs {
			select {
			case <-p.Done():
			default:
				ps = append(ps, p)
			}
		}
		return ps
	}
	began, prodDone := time.Now(), false
	var fills []string // set when the producer is done
	var cut []string   // positions of the records whose handler a kill interrupted
	// status describes the storm for a stall report: what the loop still
	// waits for, and each worker's last sign of life.
	status := func() string {
		var b strings.Builder
		n := len(led.counts())
		lctx, lcancel := context.WithTimeout(context.Background(), 5*time.Second)
		lag := commitLag(lctx, adm, group, topic)
		lcancel()
		fmt.Fprintf(&b, "after %v: produced all: %v (%d filler messages); kills %d/%d, leaves %d/%d; ledger %d IDs of %d messages; commit lag %d; %d outcome lines",
			time.Since(began).Round(time.Millisecond), prodDone, len(fills), kills, size.Kills, leaves, size.Leaves, n, size.Messages, lag, len(outs))
		for _, p := range procs {
			state := "running"
			select {
			case <-p.Done():
				state = "exited"
			default:
			}
			role := "worker"
			if p.blockAfter > 0 {
				role = fmt.Sprintf("victim (blocks at handler run %d)", p.blockAfter)
			}
			last := "never"
			if !p.last.IsZero() {
				last = time.Since(p.last).Round(time.Millisecond).String() + " ago"
			}
			fmt.Fprintf(&b, "\n  worker %d pid %d, %s, started %v in, %s; %d outcomes (%d ran), last line %s",
				p.n, p.Pid(), role, p.started.Sub(began).Round(time.Millisecond), state, p.outs, p.ran, last)
			if p.blocked {
				b.WriteString(", BLOCKED")
			}
			if p.signal != "" {
				fmt.Fprintf(&b, ", SIG%s %v ago", p.signal, time.Since(p.signalled).Round(time.Millisecond))
			}
		}
		return b.String()
	}
	const stallAfter = 15 * time.Second
	progress, stallLogged := time.Now(), false
	leaveTick := time.NewTicker(700 * time.Millisecond)
	defer leaveTick.Stop()
	check := time.NewTicker(250 * time.Millisecond)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			t.Fatalf("storm did not finish in %v: %s", size.Timeout, status())
		case pr := <-produced:
			prodDone = true
			fills = pr.fills
			if pr.err != nil {
				t.Fatalf("produce: %v\n%s", pr.err, status())
			}
		case e := <-events:
			p := procs[e.proc]
			p.last, progress, stallLogged = time.Now(), time.Now(), false
			switch e.kind {
			case "OUT":
				outs = append(outs, e)
				p.outs++
				if e.status == "ran" {
					p.ran++
				}
			case "READY":
				p.ready = true
			case "BLOCKED":
				p.blocked = true
				if victim != nil && e.proc == victim.n {
					victim.signal, victim.signalled = "KILL", time.Now()
					victim.Kill()
					kills++
					cut = append(cut, e.pos)
					if kills == size.Kills {
						close(killsDone)
					}
					victim = nil
					if ba := blockAfter(); ba > 0 {
						victim = start(ba)
					} else {
						start(0)
					}
				}
			}
			continue
		case <-leaveTick.C:
			// A consumer leaves (SIGTERM: revoke, commit, leave the
			// group) and another joins, while records flow. Only a
			// consumer that is running (READY) and was not signalled
			// yet: one still shutting down after its SIGTERM is alive
			// until it exits, and signalling it again would count a
			// leave that never happens and add a member.
			if leaves < size.Leaves {
				for _, p := range alive() {
					if p != victim && p.ready && p.signal == "" {
						p.signal, p.signalled = "TERM", time.Now()
						p.Term()
						leaves++
						start(0)
						break
					}
				}
			}
			continue
		case <-check.C:
		}
		if !stallLogged && time.Since(progress) > stallAfter {
			t.Logf("storm: no outcome for %v: %s", stallAfter, status())
			stallLogged = true
		}
		if !prodDone || kills < size.Kills || leaves < size.Leaves {
			continue
		}
		if len(led.counts()) < size.Messages+len(fills) {
			continue
		}
		if lag := commitLag(ctx, adm, group, topic); lag == 0 {
			break
		}
	}
	for _, p := range alive() {
		p.Term()
	}
	allDone := make(chan struct{})
	go func() {
		for _, p := range procs {
			<-p.Done()
		}
		close(allDone)
	}()
drain:
	for {
		select {
		case e := <-events:
			if e.kind == "OUT" {
				outs = append(outs, e)
			}
		case <-allDone:
			for {
				select {
				case e := <-events:
					if e.kind == "OUT" {
						outs = append(outs, e)
					}
				default:
					break drain
				}
			}
		}
	}

	counts := led.counts()
	tally := stormtest.Count(append(ids, fills...), counts)
	for _, id := range tally.DupIDs {
		if !positionIDs {
			t.Logf("%s applied %d times: %s", id, counts[id], led.log(id))
		}
	}
	// A redelivery is a delivery of a record position that had been
	// delivered before: processed to an outcome, or interrupted by a kill
	// (the victim's blocked handler prints no outcome, so counting
	// deliveries beyond the sends would miss exactly the forced ones).
	deliveries, dupStatus, redeliveries := 0, 0, 0
	seen := map[string]bool{}
	for _, pos := range cut {
		seen[pos] = true
	}
	for _, e := range outs {
		if e.attempt == 1 {
			deliveries++
			if seen[e.pos] {
				redeliveries++
			}
			seen[e.pos] = true
		}
		if e.status == "duplicate" {
			dupStatus++
		}
	}
	t.Logf("storm: %d messages (+%d fillers), %d duplicate sends, %d workers started, %d kills, %d leaves/joins; %d deliveries processed (%d of records delivered before: redeliveries), %d Duplicate outcomes, %d side effects; %v",
		size.Messages, len(fills), size.DupSends, len(procs), kills, leaves, deliveries, redeliveries, dupStatus, tally.Effects, time.Since(began).Round(time.Millisecond))
	return stormResult{summary: tally.Summary, dupIDs: tally.DupIDs, lostIDs: tally.LostIDs,
		kills: kills, leaves: leaves, redeliveries: redeliveries, dupStatus: dupStatus, starts: len(procs), fills: len(fills), took: time.Since(began)}
}

// commitLag is how many records of topic lie beyond group's committed
// offsets (-1 when it cannot be read).
func commitLag(ctx context.Context, adm *kadm.Client, group, topic string) int64 {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return -1
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return -1
	}
	var lag int64
	var missing error
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := committed.Lookup(o.Topic, o.Partition)
		switch {
		case !ok && o.Offset > 0:
			missing = errors.New("uncommitted partition")
		case ok:
			lag += max(0, o.Offset-c.At)
		}
	})
	if missing != nil {
		return -1
	}
	return lag
}
