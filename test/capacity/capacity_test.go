package capacity

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/dynamostore"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/test/internal/emulator"
)

// sizes are the run's windows and counts.
type sizes struct {
	window     time.Duration // each measured window
	workers    int           // worker processes per window
	goroutines int           // per worker, networked stores
	replayKeys int           // per worker
	fill       map[string]int
	cleanupWin time.Duration
}

func runSizes() sizes {
	if full() {
		return sizes{window: 8 * time.Second, workers: 2, goroutines: 16, replayKeys: 2000,
			fill:       map[string]int{"redis": 100_000, "postgres": 50_000, "dynamo": 1_000, "firestore": 2_000, "file": 10_000},
			cleanupWin: 30 * time.Second}
	}
	return sizes{window: time.Second, workers: 2, goroutines: 8, replayKeys: 100,
		fill:       map[string]int{"redis": 2_000, "postgres": 1_000, "dynamo": 100, "firestore": 100, "file": 300},
		cleanupWin: 6 * time.Second}
}

// target is one store under test: how workers reach it and how the
// harness reads its server's CPU and its records' sizes.
type target struct {
	store, title string
	cfg          workerConfig
	goroutines   int
	replayKeys   int
	serverPIDs   func() []int
	serverNote   string
	recordBytes  func(ctx context.Context) (store, raw float64, note string, err error)
	// expireFill makes the filled records expire (Redis: PEXPIRE, which
	// its own expiry then removes); nil: the fill's TTL does.
	cleanup func(ctx context.Context, n int, window time.Duration) (removed int, took time.Duration, note string, err error)
}

// storeRow is one store's results.
type storeRow struct {
	Title      string
	ServerNote string
	Sat        map[string]measurement // by op, closed loop
	Half       map[string]measurement // by op, at half of Sat's rate
	Bytes      float64
	RawBytes   float64
	BytesNote  string
	Cleanup    measurement // Removed, Wall
	CleanupW   measurement // the writers during cleanup
	Fill       int
	Load       string
}

var report struct {
	sync.Mutex
	stores      []storeRow
	pg          *pgSizeRow
	dynamoUnits []unitRow
}

var opsOrder = []string{opFirst, opRawFirst, opReplay, opRawReplay}

// TestCapacity measures every store: the short version by default, the
// full one with IDEM_CAPACITY=full.
func TestCapacity(t *testing.T) {
	if os.Getenv(workerEnv) != "" {
		t.Skip("worker process")
	}
	sz := runSizes()
	stores := strings.Split(testenv.Env("IDEM_CAPACITY_STORES", "redis,postgres,dynamo,firestore,file"), ",")
	for _, name := range stores {
		t.Run(name, func(t *testing.T) {
			tg := newTarget(t, name, sz)
			row := storeRow{Title: tg.title, ServerNote: tg.serverNote, Sat: map[string]measurement{}, Half: map[string]measurement{}, Load: loadAvg()}
			dir := t.TempDir()
			ctx := context.Background()
			for _, op := range opsOrder {
				cfg := tg.cfg
				cfg.Op, cfg.Goroutines, cfg.Duration = op, tg.goroutines, sz.window
				cfg.Worker = 100 * (len(row.Sat) + 1)
				if op == opReplay || op == opRawReplay {
					cfg.Keys = tg.replayKeys
				}
				sat, err := runWorkers(t, dir, cfg, sz.workers, tg.serverPIDs)
				if err != nil {
					t.Fatalf("%s saturation: %v", op, err)
				}
				checkErrors(t, name+" "+op+" saturation", sat)
				row.Sat[op] = sat
				cfg.Rate = sat.Rate / 2 / float64(sz.workers)
				cfg.Worker += 50
				// Open loop (runWindow), with the clients' pools of the
				// saturation window: more than half its rate needs.
				half, err := runWorkers(t, dir, cfg, sz.workers, tg.serverPIDs)
				if err != nil {
					t.Fatalf("%s at half: %v", op, err)
				}
				checkErrors(t, name+" "+op+" at half", half)
				row.Half[op] = half
				t.Logf("%s %s: %.0f/s (client %v/op, server %v/op); at %.0f/s p50 %v p99 %v",
					name, op, sat.Rate, perOp(sat.ClientCPU, sat.Ops), perOp(sat.ServerCPU, sat.Ops), half.Rate, half.P50, half.P99)
			}
			var err error
			row.Bytes, row.RawBytes, row.BytesNote, err = tg.recordBytes(ctx)
			if err != nil {
				t.Fatalf("bytes per record: %v", err)
			}
			t.Logf("%s: %.0f bytes per record (raw %.0f) %s", name, row.Bytes, row.RawBytes, row.BytesNote)
			row.Fill = sz.fill[name]
			row.Cleanup, row.CleanupW = cleanupRun(t, dir, tg, sz, row.Fill)
			report.Lock()
			report.stores = append(report.stores, row)
			report.Unlock()
		})
	}
}

func checkErrors(t *testing.T, what string, m measurement) {
	t.Helper()
	if m.Ops == 0 {
		t.Fatalf("%s: no operation completed", what)
	}
	// A saturated emulator may time out now and then; more than 1 % is a
	// broken run, not a measurement.
	if m.Errors*100 > m.Ops {
		t.Fatalf("%s: %d of %d operations failed, first: %s", what, m.Errors, m.Ops, m.FirstErr)
	}
	if m.Errors > 0 {
		t.Logf("%s: %d of %d operations failed, first: %s", what, m.Errors, m.Ops, m.FirstErr)
	}
}

// cleanupRun fills n records with a 1 s TTL, lets them expire, and
// removes them while writers keep executing new keys: Cleanup
// (idemstore.Admin) in a worker process, or for Redis its own expiry.
func cleanupRun(t *testing.T, dir string, tg *target, sz sizes, n int) (measurement, measurement) {
	t.Helper()
	fill := tg.cfg
	fill.Op, fill.Goroutines, fill.Count, fill.Worker = opFill, tg.goroutines, n/sz.workers, 900
	fill.TTL = time.Second
	if tg.cleanup != nil {
		fill.TTL = 24 * time.Hour
		fill.Name += "fill:" // a prefix of its own, which redisExpire finds
	}
	if _, err := runWorkers(t, dir, fill, sz.workers, nil); err != nil {
		t.Fatalf("fill: %v", err)
	}
	time.Sleep(2 * time.Second) // past the fill's TTL
	writers := tg.cfg
	writers.Op, writers.Goroutines, writers.Worker = opFirst, 4, 950
	var wm measurement
	var werr error
	var wg sync.WaitGroup
	var cm measurement
	if tg.cleanup != nil {
		writers.Duration = sz.cleanupWin
		wg.Add(1)
		go func() { defer wg.Done(); wm, werr = runWorkers(t, dir, writers, 1, nil) }()
		time.Sleep(time.Second)
		removed, took, note, err := tg.cleanup(context.Background(), fill.Count*sz.workers, sz.cleanupWin-2*time.Second)
		if err != nil {
			t.Fatalf("cleanup: %v", err)
		}
		cm = measurement{Removed: removed, Wall: took, Ops: 1, FirstErr: note}
	} else {
		clean := tg.cfg
		clean.Op, clean.Worker, clean.Goroutines = opCleanup, 990, 1
		writers.Duration = sz.cleanupWin
		wg.Add(1)
		go func() { defer wg.Done(); wm, werr = runWorkers(t, dir, writers, 1, nil) }()
		time.Sleep(time.Second)
		var err error
		cm, err = runWorkers(t, dir, clean, 1, tg.serverPIDs)
		if err != nil {
			t.Fatalf("cleanup: %v", err)
		}
		if cm.Errors > 0 {
			t.Fatalf("cleanup: %s", cm.FirstErr)
		}
	}
	wg.Wait()
	if werr != nil {
		t.Fatalf("writers during cleanup: %v", werr)
	}
	t.Logf("%s cleanup: %d records in %v (%.0f/s) while writers ran %.0f/s", tg.store, cm.Removed, cm.Wall, float64(cm.Removed)/cm.Wall.Seconds(), wm.Rate)
	if tg.cleanup == nil && cm.Removed < fill.Count*sz.workers {
		t.Errorf("%s cleanup removed %d records, want at least the %d expired ones", tg.store, cm.Removed, fill.Count*sz.workers)
	}
	return cm, wm
}

const (
	pgHowTo        = "scripts/base-services.sh (or: service postgresql start), or set IDEM_POSTGRES_URL"
	redisHowTo     = "scripts/base-services.sh (or: redis-server --daemonize yes), or set IDEM_REDIS_ADDR"
	dynamoHowTo    = "scripts/dynalite.sh (make services), or set IDEM_DYNAMO_ENDPOINT"
	firestoreHowTo = "scripts/firestore.sh (make services), or set IDEM_FIRESTORE_EMULATOR_HOST"
)

// newTarget connects to a store's server (skipping, or failing under
// CI=true, when it is down), prepares the run's namespace there and
// removes it when the test ends.
func newTarget(t *testing.T, name string, sz sizes) *target {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run := testenv.RandName()
	tg := &target{store: name, goroutines: sz.goroutines, replayKeys: sz.replayKeys}
	tg.cfg.Store = name
	switch name {
	case "redis":
		addr := testenv.RedisAddr()
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		if err := rdb.Ping(ctx).Err(); err != nil {
			missing(t, "Redis at "+addr, err, redisHowTo)
		}
		info, err := rdb.Info(ctx, "server").Result()
		if err != nil {
			t.Fatal(err)
		}
		pid := infoInt(info, "process_id")
		version := infoField(info, "redis_version")
		prefix := "idemcap:" + run + ":"
		tg.title = "Redis " + version
		tg.cfg.Addr, tg.cfg.Name = addr, prefix
		tg.serverPIDs = func() []int { return []int{int(pid)} }
		tg.serverNote = fmt.Sprintf("redis-server pid %d (/proc/%d/stat)", pid, pid)
		tg.recordBytes = func(ctx context.Context) (float64, float64, string, error) {
			st, ns, err := redisMemory(ctx, rdb, prefix+"{*")
			if err != nil {
				return 0, 0, "", err
			}
			raw, _, err := redisMemory(ctx, rdb, prefix+"raw:*")
			return st, raw, fmt.Sprintf("`MEMORY USAGE` of %d records (mean; key, value and Redis's per-key overhead), raw: the same for `SET` of a 128-byte value", ns), err
		}
		tg.cleanup = func(ctx context.Context, n int, window time.Duration) (int, time.Duration, string, error) {
			removed, took, share, err := redisExpire(ctx, rdb, prefix, n, window)
			cfgs, _ := rdb.ConfigGet(ctx, "*").Result()
			note := fmt.Sprintf("Redis's own expiry (hz %s, active-expire-effort %s); the expired keys were %.0f %% of the server's keys with a TTL",
				cfgs["hz"], cfgs["active-expire-effort"], 100*share)
			if removed < n {
				note += fmt.Sprintf("; %d of %d still held when the %v window ended", n-removed, n, window)
			}
			return removed, took, note, err
		}
		t.Cleanup(func() { redisDelete(rdb, prefix+"*"); rdb.Close() })
	case "postgres":
		url := testenv.PostgresURL()
		pool, err := pgxpool.New(ctx, url)
		if err == nil {
			err = pool.Ping(ctx)
		}
		if err != nil {
			missing(t, "PostgreSQL at "+url, err, pgHowTo)
		}
		schema := "idemcap_" + run
		app := "idemcap-" + run
		if _, err := pool.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+schema+` CASCADE`)
			pool.Close()
		})
		if err := pgstore.Migrate(ctx, pool, pgstore.WithSchema(schema)); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `CREATE TABLE `+schema+`.raw (key text COLLATE "C" PRIMARY KEY, val bytea NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		var version string
		_ = pool.QueryRow(ctx, `SHOW server_version`).Scan(&version)
		tg.title = "PostgreSQL " + strings.Fields(version + " ?")[0]
		tg.cfg.Addr, tg.cfg.Name, tg.cfg.App = url, schema, app
		tg.serverPIDs = func() []int { return pgBackends(pool, app) }
		tg.serverNote = "the workers' backends (pg_stat_activity by application_name; WAL writer and checkpointer not included)"
		tg.recordBytes = func(ctx context.Context) (float64, float64, string, error) {
			st, err := pgBytes(ctx, pool, schema, "idem_records")
			if err != nil {
				return 0, 0, "", err
			}
			raw, err := pgBytes(ctx, pool, schema, "raw")
			return st, raw, "`pg_total_relation_size` (heap, TOAST, primary key and expiry index) / rows, after `VACUUM`", err
		}
	case "dynamo":
		ep := emulator.DynamoEndpoint()
		client := emulator.Dynamo(ep, 0, 0)
		if _, err := client.ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
			missing(t, "a DynamoDB-compatible server at "+ep, err, dynamoHowTo)
		}
		table := "idemcap_" + run
		if err := dynamostore.CreateTable(ctx, client, table); err != nil && !errors.Is(err, dynamostore.ErrTTLNotEnabled) {
			t.Fatal(err)
		}
		if _, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String(table + "_raw"),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
		}); err != nil {
			t.Fatal(err)
		}
		waitTable(ctx, t, client, table+"_raw")
		t.Cleanup(func() {
			for _, tb := range []string{table, table + "_raw"} {
				_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(tb)})
			}
		})
		tg.emulated(emulatedStore{
			title: "DynamoDB (dynalite)", addr: ep, name: table,
			emulator: "dynalite", port: 4567, server: "dynalite's process tree",
			size:     func(ctx context.Context, tb string) (float64, error) { return dynamoBytes(ctx, client, tb) },
			sizeNote: "DynamoDB item size (attribute names + values, the billed size) of up to 500 scanned items, mean",
		})
	case "firestore":
		host := testenv.FirestoreEmulatorHost()
		client, err := firestoreClient(ctx, host)
		if err == nil {
			_, err = client.Collection("probe").Doc("probe").Get(ctx)
			if status.Code(err) == codes.NotFound {
				err = nil
			}
		}
		if err != nil {
			missing(t, "the Firestore emulator at "+host, err, firestoreHowTo)
		}
		t.Cleanup(func() { client.Close() })
		coll := "idemcap_" + run
		tg.emulated(emulatedStore{
			title: "Firestore (emulator)", addr: host, name: coll,
			emulator: "firestore", port: 8765, server: "the emulator's process tree",
			size:     func(ctx context.Context, c string) (float64, error) { return firestoreBytes(ctx, client, c) },
			sizeNote: "Firestore document size (name + fields + 32, Firestore's storage-size rules) of up to 500 documents, mean",
		})
	case "file":
		dir := t.TempDir()
		tg.title = "File store"
		tg.cfg.Name = dir
		tg.goroutines = min(tg.goroutines, 4)
		tg.serverNote = "none (in process: the workers' CPU is all of it)"
		tg.recordBytes = func(ctx context.Context) (float64, float64, string, error) {
			st, n, err := fileBytes(filepath.Join(dir, "store"))
			if err != nil {
				return 0, 0, "", err
			}
			raw, _, err := fileBytes(filepath.Join(dir, "raw"))
			return st, raw, fmt.Sprintf("allocated bytes (st_blocks × 512) of %d record files, mean (lock files and directories not counted)", n), err
		}
	default:
		t.Fatalf("unknown store %q", name)
	}
	return tg
}

// emulatedStore is a store an emulator on this machine serves: its
// records are in name, the raw writes' in name+"_raw".
type emulatedStore struct {
	title, addr, name string
	emulator          string // as scripts/<emulator>.sh names it
	port              int    // the emulator's
	server            string // names the emulator's process tree
	size              func(ctx context.Context, name string) (float64, error)
	sizeNote          string // what size measures
}

// emulated sets tg up for e: the emulated stores' caps on goroutines and
// replay keys, the emulator's process tree as the server, and e's record
// sizes.
func (tg *target) emulated(e emulatedStore) {
	tg.title = e.title
	tg.cfg.Addr, tg.cfg.Name = e.addr, e.name
	tg.goroutines = min(tg.goroutines, 8)
	tg.replayKeys = min(tg.replayKeys, 300)
	// Where scripts/<emulator>.sh keeps the pid file: $<EMULATOR>_RUNDIR,
	// else $TMPDIR/idemgen-<emulator>.
	runDir := testenv.Env(strings.ToUpper(e.emulator)+"_RUNDIR", filepath.Join(os.TempDir(), "idemgen-"+e.emulator))
	pidPath := filepath.Join(runDir, strconv.Itoa(e.port)+".pid")
	tg.serverPIDs = func() []int { return treeOf(pidFile(pidPath)) }
	tg.serverNote = e.server + " (" + pidPath + ")"
	tg.recordBytes = func(ctx context.Context) (float64, float64, string, error) {
		st, err := e.size(ctx, e.name)
		if err != nil {
			return 0, 0, "", err
		}
		raw, err := e.size(ctx, e.name+"_raw")
		return st, raw, e.sizeNote, err
	}
}

func treeOf(pid int) []int {
	if pid == 0 {
		return nil
	}
	return procTree(pid)
}

func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

func infoInt(info, name string) int64 {
	n, _ := strconv.ParseInt(infoField(info, name), 10, 64)
	return n
}

// redisMemory is the mean MEMORY USAGE of up to 1,000 keys matching
// pattern.
func redisMemory(ctx context.Context, rdb *redis.Client, pattern string) (float64, int, error) {
	iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
	var sum int64
	n := 0
	for iter.Next(ctx) && n < 1000 {
		u, err := rdb.MemoryUsage(ctx, iter.Val()).Result()
		if err != nil {
			if errors.Is(err, redis.Nil) {
				continue
			}
			return 0, 0, err
		}
		sum += u
		n++
	}
	if err := iter.Err(); err != nil {
		return 0, 0, err
	}
	if n == 0 {
		return 0, 0, fmt.Errorf("no key matches %s", pattern)
	}
	return float64(sum) / float64(n), n, nil
}

func redisKeys(ctx context.Context, rdb *redis.Client, pattern string) ([]string, error) {
	iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	return keys, iter.Err()
}

func redisDelete(rdb *redis.Client, pattern string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keys, _ := redisKeys(ctx, rdb, pattern)
	for len(keys) > 0 {
		n := min(len(keys), 500)
		rdb.Del(ctx, keys[:n]...)
		keys = keys[n:]
	}
}

// redisExpire makes the fill's n records expire now (PEXPIRE 1 ms) and
// follows Redis's own expiry for up to window by INFO stats expired_keys
// (the server's count: other clients' expiring keys on a shared server
// can only make it look faster). It returns the keys removed, the time
// taken, and the filled keys' share of all keys with a TTL, which
// Redis's adaptive expiry depends on.
func redisExpire(ctx context.Context, rdb *redis.Client, prefix string, n int, window time.Duration) (int, time.Duration, float64, error) {
	keys, err := redisKeys(ctx, rdb, prefix+"fill:*")
	if err != nil {
		return 0, 0, 0, err
	}
	if len(keys) < n {
		return 0, 0, 0, fmt.Errorf("found %d filled records, want %d", len(keys), n)
	}
	ks, _ := rdb.Info(ctx, "keyspace").Result()
	withTTL := 0
	if i := strings.Index(ks, "expires="); i >= 0 {
		withTTL, _ = strconv.Atoi(strings.SplitN(ks[i+len("expires="):], ",", 2)[0])
	}
	share := float64(len(keys)) / float64(max(withTTL, len(keys)))
	stats := func() int64 {
		info, _ := rdb.Info(ctx, "stats").Result()
		return infoInt(info, "expired_keys")
	}
	e0 := stats()
	t0 := time.Now()
	for rest := keys; len(rest) > 0; {
		pipe := rdb.Pipeline()
		for _, k := range rest[:min(len(rest), 1000)] {
			pipe.PExpire(ctx, k, time.Millisecond)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, 0, 0, err
		}
		rest = rest[min(len(rest), 1000):]
	}
	for time.Since(t0) < window && stats()-e0 < int64(len(keys)) {
		time.Sleep(10 * time.Millisecond)
	}
	removed := min(int(stats()-e0), len(keys))
	return removed, time.Since(t0), share, nil
}

func pgBackends(pool *pgxpool.Pool, app string) []int {
	rows, err := pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		return nil
	}
	pids, _ := pgx.CollectRows(rows, pgx.RowTo[int32])
	out := make([]int, len(pids))
	for i, p := range pids {
		out[i] = int(p)
	}
	return out
}

// pgBytes is a table's total size (heap, TOAST, indexes) per live row,
// after VACUUM.
func pgBytes(ctx context.Context, pool *pgxpool.Pool, schema, table string) (float64, error) {
	q := pgx.Identifier{schema, table}.Sanitize()
	if _, err := pool.Exec(ctx, `VACUUM `+q); err != nil {
		return 0, err
	}
	var size, rows int64
	if err := pool.QueryRow(ctx, `SELECT pg_total_relation_size($1::regclass), (SELECT count(*) FROM `+q+`)`, q).Scan(&size, &rows); err != nil {
		return 0, err
	}
	if rows == 0 {
		return 0, fmt.Errorf("%s is empty", q)
	}
	return float64(size) / float64(rows), nil
}

func waitTable(ctx context.Context, t *testing.T, client *dynamodb.Client, table string) {
	t.Helper()
	for {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err == nil && out.Table.TableStatus == types.TableStatusActive {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("table %s not active: %v", table, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dynamoItemSize is DynamoDB's size of an item: each attribute's name
// plus its value (strings and binaries their length, numbers about one
// byte per two digits plus one, booleans and nulls one byte, lists and
// maps three bytes plus their elements).
func dynamoItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + dynamoValueSize(v)
	}
	return n
}

func dynamoValueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		digits := len(strings.TrimLeft(strings.NewReplacer("-", "", ".", "").Replace(v.Value), "0"))
		return (digits+1)/2 + 1
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + dynamoValueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + dynamoValueSize(e)
		}
		return n
	}
	return 0
}

func dynamoBytes(ctx context.Context, client *dynamodb.Client, table string) (float64, error) {
	out, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), Limit: aws.Int32(500)})
	if err != nil {
		return 0, err
	}
	if len(out.Items) == 0 {
		return 0, fmt.Errorf("table %s is empty", table)
	}
	sum := 0
	for _, it := range out.Items {
		sum += dynamoItemSize(it)
	}
	return float64(sum) / float64(len(out.Items)), nil
}

// firestoreDocSize is Firestore's storage size of a document: its name
// (each path segment's bytes + 1, plus 16) plus its fields (each name's
// bytes + 1 plus the value's size) plus 32.
func firestoreDocSize(snap *firestore.DocumentSnapshot) int {
	n := 16 + 32
	path := strings.SplitN(snap.Ref.Path, "/documents/", 2)
	if len(path) == 2 {
		for _, seg := range strings.Split(path[1], "/") {
			n += len(seg) + 1
		}
	}
	for k, v := range snap.Data() {
		n += len(k) + 1 + firestoreValueSize(v)
	}
	return n
}

func firestoreValueSize(v any) int {
	switch v := v.(type) {
	case string:
		return len(v) + 1
	case []byte:
		return len(v)
	case int64, float64, time.Time:
		return 8
	case bool, nil:
		return 1
	case []any:
		n := 0
		for _, e := range v {
			n += firestoreValueSize(e)
		}
		return n
	case map[string]any:
		n := 0
		for k, e := range v {
			n += len(k) + 1 + firestoreValueSize(e)
		}
		return n
	}
	return 8
}

func firestoreBytes(ctx context.Context, client *firestore.Client, coll string) (float64, error) {
	it := client.Collection(coll).Limit(500).Documents(ctx)
	defer it.Stop()
	sum, n := 0, 0
	for {
		snap, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return 0, err
		}
		sum += firestoreDocSize(snap)
		n++
	}
	if n == 0 {
		return 0, fmt.Errorf("collection %s is empty", coll)
	}
	return float64(sum) / float64(n), nil
}

// fileBytes is the mean allocated size of the regular files under dir.
func fileBytes(dir string) (float64, int, error) {
	var sum int64
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".lock") {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		sum += allocated(info)
		n++
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	if n == 0 {
		return 0, 0, fmt.Errorf("no file under %s", dir)
	}
	return float64(sum) / float64(n), n, nil
}
