package pgstore

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/replayhint"
)

// Backend CPU benchmarks: the store and the raw statements run on one
// pooled connection, so one PostgreSQL backend serves both, and the CPU
// time that backend spent (/proc/<pid>/schedstat, nanoseconds, user and
// system) is read around blocks of each. This counts what EXPLAIN's
// executor time leaves out: parsing, planning, commit, WAL insertion and
// the protocol. It needs the server on this machine (127.0.0.1); the
// blocks alternate so that load on the machine hits both alike.

// cpuBlock is how many operations of one kind run between two readings:
// a backend that is still running when the reading is taken leaves its
// last microseconds to the next block, so blocks keep that small.
const cpuBlock = 25

// backendCPU returns a function that reads the CPU time, in ns, of the
// backend serving pool's only connection.
func backendCPU(b *testing.B, pool *pgxpool.Pool) func() int64 {
	var pid int
	if err := pool.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		b.Fatal(err)
	}
	path := fmt.Sprintf("/proc/%d/schedstat", pid)
	if _, err := os.ReadFile(path); err != nil {
		b.Skipf("backend CPU needs the PostgreSQL server on this machine: %v", err)
	}
	return func() int64 {
		raw, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		f := strings.Fields(string(raw))
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		return ns
	}
}

// cpuVsRaw runs b.N operations of each function in alternating blocks on
// the backend read by cpu and returns each one's backend ns per operation.
func cpuVsRaw(b *testing.B, cpu func() int64, fs ...func(i int) error) []float64 {
	return clocksVsRaw(b, []func() int64{cpu}, fs...)[0]
}

// clocksVsRaw is cpuVsRaw read on several clocks at once: out[c][k] is
// clock c's µs per operation of fs[k].
func clocksVsRaw(b *testing.B, clocks []func() int64, fs ...func(i int) error) [][]float64 {
	sums := make([][]int64, len(clocks))
	for c := range sums {
		sums[c] = make([]int64, len(fs))
	}
	t := make([]int64, len(clocks))
	b.ResetTimer()
	for start := 0; start < b.N; start += cpuBlock {
		for k := range fs {
			k = (k + start/cpuBlock) % len(fs) // alternate who goes first
			for c, clock := range clocks {
				t[c] = clock()
			}
			for i := start; i < min(start+cpuBlock, b.N); i++ {
				if err := fs[k](i); err != nil {
					b.Fatal(err)
				}
			}
			for c, clock := range clocks {
				sums[c][k] += clock() - t[c]
			}
		}
	}
	b.StopTimer()
	out := make([][]float64, len(clocks))
	for c := range sums {
		out[c] = make([]float64, len(fs))
		for k, s := range sums[c] {
			out[c][k] = float64(s) / float64(b.N) / 1e3
		}
	}
	return out
}

// clientCPU reads this process's CPU time (user and system, all threads:
// the garbage collector's work for what a block allocated counts too), in
// ns.
func clientCPU(b *testing.B) func() int64 {
	return func() int64 {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return ru.Utime.Nano() + ru.Stime.Nano()
	}
}

// cpuPool is a one-connection pool: the store and the raw statements share
// its backend.
func cpuPool(b *testing.B) *pgxpool.Pool {
	return newPool(b, func(c *pgxpool.Config) { c.MaxConns = 1; c.MinConns = 1 })
}

// warm runs f a few times so that every statement is prepared (and past
// the plan cache's first custom plans) before the timed part.
func warm(b *testing.B, n int, f func(i int) error) {
	for i := range n {
		if err := f(i); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFirstExecutionBackendCPU: a first execution (Store.Claim of a
// new key + Store.Complete: two statements, two commits) against a raw
// INSERT of a key and result, and against that INSERT followed by a raw
// UPDATE of the row (two commits, the least two-step record costs),
// measured as backend CPU per operation in the same run. x_insert is
// store / INSERT, x_two_commits is store / (INSERT + UPDATE). claim=insert
// is the store as it is (claimNew), claim=statement the claim statement
// alone (readFirst Never: the path before claimNew).
//
//	go test -run '^$' -bench BackendCPU -benchtime 1000x -count 3 .
func BenchmarkFirstExecutionBackendCPU(b *testing.B) {
	for _, m := range []struct {
		name string
		mode replayhint.Mode
	}{{"insert", replayhint.OnHint}, {"statement", replayhint.Never}} {
		b.Run("claim="+m.name, func(b *testing.B) { firstExecutionCPU(b, m.mode) })
	}
}

func firstExecutionCPU(b *testing.B, mode replayhint.Mode) {
	pool := cpuPool(b)
	s := newStore(b, pool)
	s.readFirst = mode
	raw := rawTable(b, s)
	cpu := backendCPU(b, pool)
	ctx := context.Background()
	data := []byte(`"receipt-0001"`)
	insSQL := "INSERT INTO " + raw + " VALUES ($1, $2)"
	updSQL := "UPDATE " + raw + " SET data = $2 WHERE key = $1"
	first := func(prefix string) func(i int) error {
		return func(i int) error {
			k := fmt.Sprint(prefix, i)
			res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: k, Owner: token(1), Fingerprint: fingerprint(1), Lease: time.Minute, TTL: time.Hour})
			if err != nil || res.Status != idemstore.ClaimAcquired {
				return fmt.Errorf("claim %s: %v %v", k, res.Status, err)
			}
			return s.Complete(ctx, idemstore.Lease{Key: k, Owner: token(1), Fence: res.Fence, TTL: time.Hour}, idemstore.Result{Data: data})
		}
	}
	insert := func(prefix string) func(i int) error {
		return func(i int) error {
			_, err := pool.Exec(ctx, insSQL, fmt.Sprint(prefix, i), data)
			return err
		}
	}
	twoCommits := func(i int) error {
		k := fmt.Sprint("u-", i)
		if _, err := pool.Exec(ctx, insSQL, k, []byte{}); err != nil {
			return err
		}
		_, err := pool.Exec(ctx, updSQL, k, data)
		return err
	}
	warm(b, 20, first("warm-s-"))
	warm(b, 20, insert("warm-r-"))
	warm(b, 20, func(i int) error { return twoCommits(-1 - i) })
	us := cpuVsRaw(b, cpu, first("k-"), insert("r-"), twoCommits)
	b.ReportMetric(us[0], "store-cpu-µs/op")
	b.ReportMetric(us[1], "insert-cpu-µs/op")
	b.ReportMetric(us[2], "insert+update-cpu-µs/op")
	b.ReportMetric(us[0]/us[1], "x_insert")
	b.ReportMetric(us[0]/us[2], "x_two_commits")
}

// BenchmarkReplayBackendCPU: a replay (Store.Claim of a completed key the
// replay hint names: the replay read) against a raw primary-key SELECT of
// a row holding the same result bytes, as backend CPU per operation in the
// same run; x_select is store / SELECT.
//
//	go test -run '^$' -bench BackendCPU -benchtime 1000x -count 3 .
func BenchmarkReplayBackendCPU(b *testing.B) {
	pool := cpuPool(b)
	s := newStore(b, pool)
	raw := rawTable(b, s)
	cpu := backendCPU(b, pool)
	replay, read := replayPair(b, pool, s, raw)
	warm(b, 20, replay)
	warm(b, 20, read)
	us := cpuVsRaw(b, cpu, replay, read)
	b.ReportMetric(us[0], "store-cpu-µs/op")
	b.ReportMetric(us[1], "select-cpu-µs/op")
	b.ReportMetric(us[0]/us[1], "x_select")
}

// BenchmarkReplayCPU: a replay through a Guard (idem.Do of a key this
// process executed: the replay hint's read) against a raw primary-key
// SELECT of a row holding the same result bytes, on one connection, in
// alternating blocks: this process's CPU and the backend's per operation,
// each as a ratio to the SELECT's, and each side's allocations. This is
// the PostgreSQL replay row of docs/CAPACITY.md on one connection.
//
//	go test -run '^$' -bench ReplayCPU -benchtime 4000x -count 3 .
func BenchmarkReplayCPU(b *testing.B) {
	pool := cpuPool(b)
	s := newStore(b, pool)
	raw := rawTable(b, s)
	_, read := replayPair(b, pool, s, raw)
	replay := guardReplays(b, s)
	warm(b, 50, replay)
	warm(b, 50, read)
	us := clocksVsRaw(b, []func() int64{clientCPU(b), backendCPU(b, pool)}, replay, read)
	b.ReportMetric(us[0][0], "client-µs/op")
	b.ReportMetric(us[0][1], "select-client-µs/op")
	b.ReportMetric(us[0][0]/us[0][1], "x_select_client")
	b.ReportMetric(us[1][0], "backend-µs/op")
	b.ReportMetric(us[1][1], "select-backend-µs/op")
	b.ReportMetric(us[1][0]/us[1][1], "x_select_backend")
	reportAllocs(b, read, replay)
}

// guardReplays executes 256 keys through a Guard over s and returns a
// replay of the i-th (modulo 256) through it.
func guardReplays(b *testing.B, s *Store) func(i int) error {
	g := idem.NewGuard(s)
	ctx := context.Background()
	keys := make([]string, 256)
	for i := range keys {
		keys[i] = fmt.Sprint("guard-", i)
		if _, err := benchCall(ctx, g, keys[i]); err != nil {
			b.Fatal(err)
		}
	}
	return func(i int) error {
		_, err := benchCall(ctx, g, keys[i%len(keys)])
		return err
	}
}

// BenchmarkReplayCPUSaturated is BenchmarkReplayCPU at saturation, the
// shape of make capacity's replay row: 16 callers on 16 connections, each
// running its share of a block as fast as the server answers, the three
// kinds in alternating blocks: a replay through a Guard (guard), the
// store's replay alone (Store.Claim of a completed key: claim) and the raw
// primary-key SELECT (raw). It reports this process's CPU per operation
// (user and system, all threads) and the throughput of each, and their
// ratios to the raw read's: x_raw_client_guard, x_raw_client_claim and
// x_raw_ops_guard. One b.N is one block of 16×20 operations of each kind.
func BenchmarkReplayCPUSaturated(b *testing.B) {
	const callers, perCaller = 16, 20
	pool := newPool(b, func(c *pgxpool.Config) { c.MaxConns = callers; c.MinConns = callers })
	s := newStore(b, pool)
	claim, read := replayPair(b, pool, s, rawTable(b, s))
	kinds := []func(int) error{guardReplays(b, s), claim, read}
	block := func(f func(int) error) error {
		var wg sync.WaitGroup
		errs := make(chan error, callers)
		for c := range callers {
			wg.Go(func() {
				for i := range perCaller {
					if err := f(c*perCaller + i); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		return <-errs
	}
	for _, f := range kinds {
		if err := block(f); err != nil { // warm every connection
			b.Fatal(err)
		}
	}
	cpu, wall := make([]int64, len(kinds)), make([]time.Duration, len(kinds))
	clock := clientCPU(b)
	b.ResetTimer()
	for n := range b.N {
		for k := range kinds {
			k = (k + n) % len(kinds) // alternate who goes first
			c0, t0 := clock(), time.Now()
			if err := block(kinds[k]); err != nil {
				b.Fatal(err)
			}
			cpu[k] += clock() - c0
			wall[k] += time.Since(t0)
		}
	}
	b.StopTimer()
	ops := float64(b.N * callers * perCaller)
	us := func(k int) float64 { return float64(cpu[k]) / ops / 1e3 }
	b.ReportMetric(us(0), "guard-client-µs/op")
	b.ReportMetric(us(1), "claim-client-µs/op")
	b.ReportMetric(us(2), "raw-client-µs/op")
	b.ReportMetric(us(0)/us(2), "x_raw_client_guard")
	b.ReportMetric(us(1)/us(2), "x_raw_client_claim")
	b.ReportMetric(wall[2].Seconds()/wall[0].Seconds(), "x_raw_ops_guard")
}
