package pgstore

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/internal/replayhint"
)

// runConc runs op n times split over conc goroutines and returns the wall
// time per op.
func runConc(n, conc int, op func(i int) error) (time.Duration, error) {
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := op(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, err
	}
	return el / time.Duration(max(n, 1)), nil
}

// benchVsRaw measures the store path and a raw single-statement pgx round
// trip in the same run: every caller alternates one raw op and one store
// op (in alternating order), so load changes on the machine hit both
// alike. It reports the mean latency of each and raw/store as "x_raw"
// (1.0 = as fast as the raw statement; at conc callers the latency ratio
// is also the throughput ratio).
func benchVsRaw(b *testing.B, conc int, raw, store func(i int) error) {
	var rawNs, storeNs atomic.Int64
	timed := func(sum *atomic.Int64, f func(int) error, i int) error {
		t := time.Now()
		err := f(i)
		sum.Add(int64(time.Since(t)))
		return err
	}
	b.ResetTimer()
	_, err := runConc(b.N, conc, func(i int) error {
		if i%2 == 0 {
			if err := timed(&rawNs, raw, i); err != nil {
				return err
			}
			return timed(&storeNs, store, i)
		}
		if err := timed(&storeNs, store, i); err != nil {
			return err
		}
		return timed(&rawNs, raw, i)
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(rawNs.Load())/float64(b.N)/1e3, "raw_µs/op")
	b.ReportMetric(float64(storeNs.Load())/float64(b.N)/1e3, "store_µs/op")
	b.ReportMetric(float64(rawNs.Load())/float64(storeNs.Load()), "x_raw")
}

// reportAllocs reports the heap allocations and bytes of one raw op and of
// one store op, each measured alone after the timed part: the evidence
// that does not move with the machine's load.
func reportAllocs(b *testing.B, raw, store func(i int) error) {
	measure := func(f func(int) error) (allocs, bytes float64) {
		const n = 2000
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range n {
			if err := f(i); err != nil {
				b.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		return float64(after.Mallocs-before.Mallocs) / n, float64(after.TotalAlloc-before.TotalAlloc) / n
	}
	ra, rb := measure(raw)
	sa, sb := measure(store)
	b.ReportMetric(ra, "raw_allocs/op")
	b.ReportMetric(sa, "store_allocs/op")
	b.ReportMetric(rb, "raw_B/op")
	b.ReportMetric(sb, "store_B/op")
}

func benchPool(b *testing.B) *pgxpool.Pool {
	return newPool(b, func(c *pgxpool.Config) { c.MaxConns = 32; c.MinConns = 32 })
}

// rawTable is the baseline's table: the same key/bytea shape as records.
func rawTable(b testing.TB, s *Store) string {
	t := pgx.Identifier{s.n.schema, "raw"}.Sanitize()
	if _, err := s.pool.Exec(context.Background(), "CREATE TABLE "+t+" (key text COLLATE \"C\" PRIMARY KEY, data bytea)"); err != nil {
		b.Fatal(err)
	}
	return t
}

// readModes are the claim's read-first policies the benchmarks compare
// (replay.go): on the hint (the default), always, never (the old path).
var readModes = []struct {
	name string
	mode replayhint.Mode
}{{"hint", replayhint.OnHint}, {"always", replayhint.Always}, {"never", replayhint.Never}}

// eachMode runs f at 1 and 32 callers for each read mode, on a new store
// and raw baseline table.
func eachMode(b *testing.B, f func(b *testing.B, conc int, pool *pgxpool.Pool, s *Store, raw string)) {
	for _, conc := range []int{1, 32} {
		for _, m := range readModes {
			b.Run(fmt.Sprint("read=", m.name, "/callers=", conc), func(b *testing.B) {
				pool := benchPool(b)
				s := newStore(b, pool)
				s.readFirst = m.mode
				f(b, conc, pool, s, rawTable(b, s))
			})
		}
	}
}

var benchSpec = idem.Spec{Name: "bench.Charge", TTL: time.Hour, Lease: 30 * time.Second}

func benchCall(ctx context.Context, g *idem.Guard, key string) (string, error) {
	c := g.Begin(&benchSpec, key)
	return idem.Do(ctx, c, func(context.Context) (string, error) { return "receipt-0001", nil })
}

// BenchmarkReplay: a duplicate through Guard + Do (one claim statement that
// finds the completed row) vs a raw primary-key SELECT of the same bytes.
func BenchmarkReplay(b *testing.B) {
	eachMode(b, func(b *testing.B, conc int, pool *pgxpool.Pool, s *Store, raw string) {
		g := idem.NewGuard(s)
		ctx := context.Background()
		const keys = 256
		for i := range keys {
			k := fmt.Sprint("order-", i)
			if _, err := benchCall(ctx, g, k); err != nil {
				b.Fatal(err)
			}
			if _, err := pool.Exec(ctx, "INSERT INTO "+raw+" VALUES ($1, $2)", k, []byte(`"receipt-0001"`)); err != nil {
				b.Fatal(err)
			}
		}
		rawSQL := "SELECT data FROM " + raw + " WHERE key = $1"
		// Warm every connection's statement cache.
		runConc(4*32, 32, func(i int) error { //nolint:errcheck
			var d []byte
			pool.QueryRow(ctx, rawSQL, fmt.Sprint("order-", i%keys)).Scan(&d) //nolint:errcheck
			_, err := benchCall(ctx, g, fmt.Sprint("order-", i%keys))
			return err
		})
		read := func(i int) error {
			var d []byte
			return pool.QueryRow(ctx, rawSQL, fmt.Sprint("order-", i%keys)).Scan(&d)
		}
		replay := func(i int) error {
			_, err := benchCall(ctx, g, fmt.Sprint("order-", i%keys))
			return err
		}
		benchVsRaw(b, conc, read, replay)
		reportAllocs(b, read, replay)
	})
}

// BenchmarkClaimReplay isolates the store from the Guard: Store.Claim of a
// completed key (the replay statement alone) vs the same raw SELECT.
func BenchmarkClaimReplay(b *testing.B) {
	eachMode(b, func(b *testing.B, conc int, pool *pgxpool.Pool, s *Store, raw string) {
		claim, read := replayPair(b, pool, s, raw)
		runConc(4*32, 32, func(i int) error { read(i); return claim(i) }) //nolint:errcheck // warm statement caches
		benchVsRaw(b, conc, read, claim)
		reportAllocs(b, read, claim)
	})
}

// replayPair completes 256 keys in s and writes the same result bytes
// under the same keys in raw; it returns a replay (Store.Claim of one of
// those keys, which must answer completed) and a raw primary-key SELECT.
func replayPair(b *testing.B, pool *pgxpool.Pool, s *Store, raw string) (replay, read func(i int) error) {
	ctx := context.Background()
	data := []byte(`"receipt-0001"`)
	const keys = 256
	for i := range keys {
		k := fmt.Sprint("order-", i)
		res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: k, Owner: token(1), Fingerprint: fingerprint(1), Lease: time.Minute, TTL: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Complete(ctx, idemstore.Lease{Key: k, Owner: token(1), Fence: res.Fence, TTL: time.Hour}, idemstore.Result{Data: data}); err != nil {
			b.Fatal(err)
		}
		if _, err := pool.Exec(ctx, "INSERT INTO "+raw+" VALUES ($1, $2)", k, data); err != nil {
			b.Fatal(err)
		}
	}
	rawSQL := "SELECT data FROM " + raw + " WHERE key = $1"
	replay = func(i int) error {
		res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: fmt.Sprint("order-", i%keys), Owner: token(2), Fingerprint: fingerprint(1), Lease: time.Minute, TTL: time.Hour})
		if err == nil && res.Status != idemstore.ClaimCompleted {
			err = fmt.Errorf("claim: %v", res.Status)
		}
		return err
	}
	read = func(i int) error {
		var d []byte
		return pool.QueryRow(ctx, rawSQL, fmt.Sprint("order-", i%keys)).Scan(&d)
	}
	return replay, read
}

// BenchmarkFirstExecution: a new key through Guard + Do (claim + complete,
// two committed writes) vs a raw single-statement INSERT (one committed
// write): the cheapest durable record of anything.
func BenchmarkFirstExecution(b *testing.B) {
	eachMode(b, func(b *testing.B, conc int, pool *pgxpool.Pool, s *Store, raw string) {
		g := idem.NewGuard(s)
		ctx := context.Background()
		rawSQL := "INSERT INTO " + raw + " VALUES ($1, $2)"
		data := []byte(`"receipt-0001"`)
		runConc(4*32, 32, func(i int) error { //nolint:errcheck
			pool.Exec(ctx, rawSQL, fmt.Sprint("warm-", i), data) //nolint:errcheck
			_, err := benchCall(ctx, g, fmt.Sprint("warm-", i))
			return err
		})
		benchVsRaw(b, conc,
			func(i int) error {
				_, err := pool.Exec(ctx, rawSQL, fmt.Sprint("k-", i), data)
				return err
			},
			func(i int) error {
				_, err := benchCall(ctx, g, fmt.Sprint("k-", i))
				return err
			})
	})
}

// BenchmarkWaitWakeup: how long after the owner's Complete returns (its
// commit, which delivers the NOTIFY) a blocked Wait returns, and the same
// measured from the start of Complete. Poll interval 10s, so every wake-up
// is a notification.
func BenchmarkWaitWakeup(b *testing.B) {
	pool := newPool(b, func(c *pgxpool.Config) { c.MaxConns = 4 })
	s := newStore(b, pool, WithPollInterval(10*time.Second))
	ctx := context.Background()
	// Start the listener.
	wctx, cancel := context.WithTimeout(ctx, time.Millisecond)
	s.Wait(wctx, "none") //nolint:errcheck
	cancel()
	for !s.lis.up.Load() {
		time.Sleep(time.Millisecond)
	}
	begin := func(i int) (string, func() error) {
		key := fmt.Sprint("w-", i)
		owner := token(byte(i))
		res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: owner, Fingerprint: fingerprint(1), Lease: time.Minute, TTL: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		return key, func() error {
			return s.Complete(ctx, idemstore.Lease{Key: key, Owner: owner, Fence: res.Fence, Duration: time.Minute, TTL: time.Hour}, idemstore.Result{Data: []byte("1")})
		}
	}
	wait := func(key string) error { return s.Wait(ctx, key) }
	// let the waiter block
	fromStart, afterCommit := idemtest.WakeupTimes(b, begin, wait, func(string) { time.Sleep(3 * time.Millisecond) })
	pct := func(d []time.Duration, q float64) float64 {
		return float64(idemtest.Quantile(d, q).Microseconds()) / 1e3
	}
	b.ReportMetric(pct(afterCommit, 0.50), "p50_ms")
	b.ReportMetric(pct(afterCommit, 0.99), "p99_ms")
	b.ReportMetric(pct(fromStart, 0.50), "p50_from_complete_ms")
	b.ReportMetric(pct(fromStart, 0.99), "p99_from_complete_ms")
}

// BenchmarkCleanup1M: Cleanup (batches of 5000) of 1,000,000 expired rows,
// generated with generate_series. Run it once: -benchtime=1x.
func BenchmarkCleanup1M(b *testing.B) {
	const rows = 1_000_000
	pool := newPool(b, nil)
	s := newStore(b, pool)
	ctx := context.Background()
	var total time.Duration
	for range b.N {
		b.StopTimer()
		seedRows(b, s, "exp-", rows, "-1 minute", "-2 minutes")
		if _, err := pool.Exec(ctx, "VACUUM ANALYZE "+s.Table()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		n, err := s.Cleanup(ctx)
		total += time.Since(start)
		if err != nil || n != rows {
			b.Fatalf("Cleanup: %d rows, %v", n, err)
		}
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/cleanup")
	b.ReportMetric(float64(rows*b.N)/total.Seconds(), "rows/s")
}

// BenchmarkReplayServerTime shows where a one-caller replay's gap to the
// raw SELECT is: on the server. Per iteration, on one connection, it runs
// EXPLAIN (ANALYZE) of the claim statement on a completed key (the path
// without the hint), of the replay read (with it) and of the raw
// primary-key SELECT, and reports each one's executor time as
// Postgres measures it (planning excluded). Across all iterations it also
// reports the WAL the replays wrote (pg_current_wal_lsn before and after
// Store.Claim replays; other sessions' writes would count too, so it is an
// upper bound): a replay writes nothing.
//
//	go test -run '^$' -bench ReplayServerTime -benchtime 2000x -count 3 ./runtime/pgstore
func BenchmarkReplayServerTime(b *testing.B) {
	pool := benchPool(b)
	s := newStore(b, pool)
	raw := rawTable(b, s)
	ctx := context.Background()
	req := idemstore.ClaimRequest{Key: "order-1", Owner: token(1), Fingerprint: fingerprint(1), Lease: time.Minute, TTL: time.Hour}
	res, err := s.Claim(ctx, req)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Complete(ctx, idemstore.Lease{Key: req.Key, Owner: req.Owner, Fence: res.Fence, Duration: time.Minute, TTL: time.Hour}, idemstore.Result{Data: []byte(`"receipt-0001"`)}); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "INSERT INTO "+raw+" VALUES ($1, $2)", req.Key, []byte(`"receipt-0001"`)); err != nil {
		b.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	// execTime runs EXPLAIN (ANALYZE) of sql and returns its Execution Time.
	execTime := func(sql string, args ...any) float64 {
		var plan []struct {
			ExecutionTime float64 `json:"Execution Time"`
		}
		if err := conn.QueryRow(ctx, "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY, FORMAT JSON) "+sql, args...).Scan(&plan); err != nil {
			b.Fatal(err)
		}
		return plan[0].ExecutionTime
	}
	claimArgs := []any{req.Key, req.Owner[:], req.Fingerprint[:], micros(req.Lease), micros(req.TTL), s.ts()}
	rawSQL := "SELECT data FROM " + raw + " WHERE key = $1"
	for range 20 { // warm the caches
		execTime(s.q.claim, claimArgs...)
		execTime(rawSQL, req.Key)
	}
	var claimMs, readMs, rawMs float64
	b.ResetTimer()
	for range b.N {
		claimMs += execTime(s.q.claim, claimArgs...)
		readMs += execTime(s.q.replay, req.Key, req.Fingerprint[:], s.ts())
		rawMs += execTime(rawSQL, req.Key)
	}
	b.StopTimer()
	b.ReportMetric(claimMs*1000/float64(b.N), "claim-exec-µs")
	b.ReportMetric(readMs*1000/float64(b.N), "replay-read-exec-µs")
	b.ReportMetric(rawMs*1000/float64(b.N), "select-exec-µs")
	b.ReportMetric(claimMs/rawMs, "x_select_claim")
	b.ReportMetric(readMs/rawMs, "x_select_read")

	var before, after string
	if err := conn.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&before); err != nil {
		b.Fatal(err)
	}
	const replays = 1000
	for range replays {
		if res, err := s.Claim(ctx, req); err != nil || res.Status != idemstore.ClaimCompleted {
			b.Fatal(res.Status, err)
		}
	}
	var walBytes float64
	if err := conn.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&after); err != nil {
		b.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::float8", after, before).Scan(&walBytes); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(walBytes/replays, "wal-bytes/replay")
}

// BenchmarkFirstExecutionServerTime: where a first execution's server time
// goes. Per iteration, on one connection, EXPLAIN (ANALYZE) of the claim
// statement on a new key and of the finish (Complete) statement, each in
// a transaction rolled back (EXPLAIN ANALYZE executes the statement), and
// of a raw INSERT; it reports each one's executor time (planning, parsing
// and the commit excluded) and (claim + finish) / INSERT.
//
//	go test -run '^$' -bench FirstExecutionServerTime -benchtime 500x -count 3 ./runtime/pgstore
func BenchmarkFirstExecutionServerTime(b *testing.B) {
	pool := benchPool(b)
	s := newStore(b, pool)
	raw := rawTable(b, s)
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	execTime := func(sql string, args ...any) float64 {
		tx, err := conn.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		return explainExec(b, tx, sql, args...)
	}
	owner, fp := token(1), fingerprint(1)
	claimFinish := func(key string) (claimMs, finishMs float64) {
		tx, err := conn.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		claimMs = explainExec(b, tx, s.q.claim, key, owner[:], fp[:], micros(time.Minute), micros(time.Hour), nil)
		return claimMs, explainExec(b, tx, s.q.finish,
			key, owner[:], int64(1), int16(stCompleted), []byte(`"receipt-0001"`), micros(time.Hour), nil, s.n.channel)
	}
	rawSQL := "INSERT INTO " + raw + " VALUES ($1, $2)"
	for i := range 20 { // warm the caches
		claimFinish(fmt.Sprint("warm-", i))
		execTime(rawSQL, fmt.Sprint("warm-", i), []byte(`"receipt-0001"`))
	}
	var claimMs, finishMs, rawMs float64
	b.ResetTimer()
	for i := range b.N {
		c, f := claimFinish(fmt.Sprint("k-", i))
		claimMs, finishMs = claimMs+c, finishMs+f
		rawMs += execTime(rawSQL, fmt.Sprint("k-", i), []byte(`"receipt-0001"`))
	}
	b.StopTimer()
	b.ReportMetric(claimMs*1000/float64(b.N), "claim-exec-µs")
	b.ReportMetric(finishMs*1000/float64(b.N), "finish-exec-µs")
	b.ReportMetric(rawMs*1000/float64(b.N), "insert-exec-µs")
	b.ReportMetric((claimMs+finishMs)/rawMs, "x_insert")
}

// explainExec runs EXPLAIN (ANALYZE) of sql in tx and returns the
// executor time Postgres measured, in ms.
func explainExec(b *testing.B, tx pgx.Tx, sql string, args ...any) float64 {
	var plan []struct {
		ExecutionTime float64 `json:"Execution Time"`
	}
	if err := tx.QueryRow(context.Background(), "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY, FORMAT JSON) "+sql, args...).Scan(&plan); err != nil {
		b.Fatal(err)
	}
	return plan[0].ExecutionTime
}
