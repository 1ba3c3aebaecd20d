package capacity

import (
	"bufio"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/test/internal/workerproc"
)

// workerEnv carries a worker's JSON configuration.
const workerEnv = "IDEM_CAP_WORKER"

// Operations a worker runs in its measured window.
const (
	opFirst     = "first"     // a first execution through the Guard (idem.Do), a new key each
	opReplay    = "replay"    // a replay through the Guard of a key executed in set-up
	opRawFirst  = "rawfirst"  // the raw client's create-if-absent of a new key
	opRawReplay = "rawreplay" // the raw client's read of a key written in set-up
	opFill      = "fill"      // Count first executions with TTL, then exit (no window)
	opCleanup   = "cleanup"   // one idemstore.Admin Cleanup pass
	opClaim     = "claim"     // Store.Claim of a new key (PostgreSQL at size)
	opClaimOld  = "claimold"  // Store.Claim of a completed key of the large table (a replay)
	opClaimMiss = "claimmiss" // Store.Get of a key that does not exist
)

// workerConfig is what the harness tells one worker process to do.
type workerConfig struct {
	Store string // redis, postgres, dynamo, firestore, file
	Addr  string // Redis address, Postgres URL, DynamoDB endpoint, emulator host
	// Name separates this run's records: the Redis prefix, the Postgres
	// schema, the DynamoDB table, the Firestore collection, the file
	// store's directory.
	Name string
	// Table is the Postgres records table (default idem_records).
	Table string
	App   string // Postgres application_name, by which the harness finds its backends

	Op         string
	Worker     int // this worker's index: its keys are its own
	Goroutines int
	Duration   time.Duration
	// Rate is this worker's operations per second, open loop (runWindow):
	// each call starts on a schedule whatever the others do, and its
	// latency counts from its scheduled start; 0 runs closed loop, each
	// of Goroutines as fast as its calls return. Goroutines also sizes
	// the clients' connection pools.
	Rate  float64
	Count int // opFill: executions
	TTL   time.Duration
	// Keys is the replay key set, executed in set-up.
	Keys int
	// BigRows: opClaimOld draws keys of the large table from 1..BigRows.
	BigRows int
	Output  string
}

// workerResult is what a worker writes to its Output file when it ends.
type workerResult struct {
	PID      int
	Ops      int64
	Errors   int64
	FirstErr string
	// Lat are the operations' latencies in ns (window ops only).
	Lat     []int64
	CPU     time.Duration // user + system CPU of this process over the window
	Wall    time.Duration // the window
	Removed int           // opCleanup
}

// TestCapacityWorker is the entry point of a worker process; without the
// worker environment variable it does nothing.
func TestCapacityWorker(t *testing.T) {
	var cfg workerConfig
	workerproc.Load(t, workerEnv, &cfg)
	if err := runWorker(cfg); err != nil {
		t.Fatalf("worker %s/%s: %v", cfg.Store, cfg.Op, err)
	}
}

// capSpec is the guarded function of every worker: it returns a 32-byte
// string at once, so what is measured is the store and the Guard.
var capSpec = &idem.Spec{Name: "capacity.Work", Version: 1, Lease: 30 * time.Second}

const resultValue = "0123456789abcdef0123456789abcdef"

func work(context.Context) (string, error) { return resultValue, nil }

// guarded runs one call of key through g.
func guarded(ctx context.Context, g *idem.Guard, spec *idem.Spec, key string) error {
	c := g.Begin(spec, key)
	v, err := idem.Do(ctx, c, work)
	if err == nil && v != resultValue {
		err = fmt.Errorf("key %s answered %q", key, v)
	}
	return err
}

// bigKey is the i-th key of the large Postgres table, as the SQL fill
// writes it, and bigFingerprint its fingerprint.
func bigKey(i int) string {
	sum := md5.Sum([]byte(strconv.Itoa(i)))
	return "capfn/1/" + hex.EncodeToString(sum[:])
}

// rawKey is the key the raw baseline writes for a call's key: the shape
// of the store's own (the function's name, version and a SHA-256 in hex),
// so that both write at random places of their index, as a service keyed
// by request IDs does, and neither gets the cheaper right-most insert of
// sequential keys.
func rawKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "idem:capacity.Work:v1:" + hex.EncodeToString(sum[:])
}

func bigFingerprint(key string) idemstore.Fingerprint { return sha256.Sum256([]byte(key)) }

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func runWorker(cfg workerConfig) error {
	ctx := context.Background()
	b, err := openBackend(ctx, cfg)
	if err != nil {
		return err
	}
	defer b.close()
	spec := *capSpec
	if cfg.TTL > 0 {
		spec.TTL = cfg.TTL
	}
	g := idem.NewGuard(b.store)
	prefix := fmt.Sprintf("w%d-%d-", cfg.Worker, os.Getpid())
	var seq atomic.Int64
	newKey := func() string { return prefix + strconv.FormatInt(seq.Add(1), 10) }

	// Set-up: the replay key set, and a warm-up that opens the clients'
	// connections before the window.
	replayKeys := make([]string, cfg.Keys)
	for i := range replayKeys {
		replayKeys[i] = prefix + "r" + strconv.Itoa(i)
	}
	if err := parallel(ctx, 16, len(replayKeys), func(i int) error {
		switch cfg.Op {
		case opReplay:
			return guarded(ctx, g, &spec, replayKeys[i])
		case opRawReplay:
			return b.rawFirst(ctx, rawKey(replayKeys[i]))
		}
		return nil
	}); err != nil {
		return fmt.Errorf("set-up: %w", err)
	}
	warm := max(cfg.Goroutines, 4)
	if err := parallel(ctx, warm, warm, func(int) error {
		if cfg.Op == opRawFirst || cfg.Op == opRawReplay {
			return b.rawRead(ctx, "warm-up")
		}
		_, err := b.store.Get(ctx, "warm-up")
		if errors.Is(err, idem.ErrNotFound) {
			err = nil
		}
		return err
	}); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}

	op := func(ctx context.Context, rng *rand.Rand) error {
		switch cfg.Op {
		case opFirst, opFill:
			return guarded(ctx, g, &spec, newKey())
		case opReplay:
			return guarded(ctx, g, &spec, replayKeys[rng.IntN(len(replayKeys))])
		case opRawFirst:
			return b.rawFirst(ctx, rawKey(newKey()))
		case opRawReplay:
			return b.rawRead(ctx, rawKey(replayKeys[rng.IntN(len(replayKeys))]))
		case opClaim:
			var owner idemstore.Token
			fillRand(rng, owner[:])
			key := newKey()
			res, err := b.store.Claim(ctx, idemstore.ClaimRequest{Key: key, Fingerprint: bigFingerprint(key), Owner: owner, Lease: 30 * time.Second, TTL: time.Hour})
			if err == nil && res.Status != idemstore.ClaimAcquired {
				err = fmt.Errorf("claim of new key %s: %v", key, res.Status)
			}
			return err
		case opClaimOld:
			var owner idemstore.Token
			fillRand(rng, owner[:])
			// A live row: the expired ones (1..expiredRows, and later every
			// expiredEvery-th) are cleanup's.
			exp := expiredRows(cfg.BigRows)
			i := exp + 1 + rng.IntN(cfg.BigRows-exp)
			if i%expiredEvery == 0 {
				i--
			}
			key := bigKey(max(i, exp+1))
			res, err := b.store.Claim(ctx, idemstore.ClaimRequest{Key: key, Fingerprint: bigFingerprint(key), Owner: owner, Lease: 30 * time.Second, TTL: time.Hour})
			if err == nil && res.Status != idemstore.ClaimCompleted && res.Status != idemstore.ClaimAcquired {
				// ClaimAcquired: a row of the expired share, claimed afresh.
				err = fmt.Errorf("claim of stored key %s: %v", key, res.Status)
			}
			return err
		case opClaimMiss:
			_, err := b.store.Get(ctx, "capfn/miss/"+newKey())
			if errors.Is(err, idem.ErrNotFound) {
				err = nil
			} else if err == nil {
				err = errors.New("a key that was never written was found")
			}
			return err
		}
		return fmt.Errorf("unknown op %q", cfg.Op)
	}

	fmt.Println("READY")
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err != nil {
		return fmt.Errorf("waiting for GO: %w", err)
	}
	res := workerResult{PID: os.Getpid()}
	cpu0, t0 := cpuNow(), time.Now()
	switch cfg.Op {
	case opCleanup:
		n, err := b.store.(idemstore.Admin).Cleanup(ctx)
		res.Removed, res.Ops = n, 1
		if err != nil {
			res.Errors, res.FirstErr = 1, err.Error()
		}
	case opFill:
		var errs atomic.Int64
		var firstErr sync.Once
		_ = parallel(ctx, cfg.Goroutines, cfg.Count, func(int) error {
			if err := op(ctx, nil); err != nil {
				errs.Add(1)
				firstErr.Do(func() { res.FirstErr = err.Error() })
			}
			return nil
		})
		res.Ops, res.Errors = int64(cfg.Count), errs.Load()
	default:
		runWindow(ctx, cfg, op, &res)
	}
	res.Wall, res.CPU = time.Since(t0), cpuNow()-cpu0
	out, err := json.Marshal(res)
	if err != nil {
		return err
	}
	if err := os.WriteFile(cfg.Output, out, 0o644); err != nil {
		return err
	}
	// Stay connected until the harness has read the server's CPU: a
	// Postgres backend ends with its connection.
	fmt.Println("DONE")
	_, _ = in.ReadString('\n')
	return nil
}

// runWindow runs op for cfg.Duration: closed loop on cfg.Goroutines
// goroutines, or open loop at cfg.Rate.
func runWindow(ctx context.Context, cfg workerConfig, op func(context.Context, *rand.Rand) error, res *workerResult) {
	if cfg.Rate > 0 {
		openLoop(ctx, cfg, op, res)
		return
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	end := time.Now().Add(cfg.Duration)
	for gi := range cfg.Goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(gi), uint64(time.Now().UnixNano())))
			lat := make([]int64, 0, 4096)
			var ops, errs int64
			var firstErr string
			for {
				t0 := time.Now()
				if !t0.Before(end) {
					break
				}
				err := op(ctx, rng)
				lat = append(lat, int64(time.Since(t0)))
				ops++
				if err != nil {
					errs++
					if firstErr == "" {
						firstErr = err.Error()
					}
				}
			}
			mu.Lock()
			res.Ops += ops
			res.Errors += errs
			res.Lat = append(res.Lat, lat...)
			if res.FirstErr == "" {
				res.FirstErr = firstErr
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
}

// openLoopPool is how many goroutines of a worker run the open loop's
// calls: far more than its connections, so a call waits for a connection
// (counted in its latency), never for a goroutine; reused, so the loop
// does not spawn one per call.
const openLoopPool = 256

// openLoop starts op at cfg.Rate for cfg.Duration, each call at its
// scheduled time (start + i/Rate) on any idle goroutine of a pool of
// openLoopPool, and counts a call's latency from that time. No call waits
// for another to return, so a slow call delays only itself, as for a
// service's independent requests; what does delay a start (the
// dispatcher not scheduled in time, a full connection pool) is in the
// latency. A fixed set of goroutines each calling back to back would
// instead hold a goroutine's next calls behind its slow one and, even
// counted from the schedule, report a queue of the harness's own making
// (coordinated omission).
func openLoop(ctx context.Context, cfg workerConfig, op func(context.Context, *rand.Rand) error, res *workerResult) {
	interval := time.Duration(float64(time.Second) / cfg.Rate)
	n := int(cfg.Duration / max(interval, 1))
	lat := make([]int64, n)
	var errs atomic.Int64
	var firstErr sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	due := make(chan int, n) // never full: the dispatcher never waits
	seed := uint64(start.UnixNano())
	for g := range openLoopPool {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for i := range due {
				err := op(ctx, rng)
				lat[i] = int64(time.Since(start.Add(time.Duration(i) * interval)))
				if err != nil {
					errs.Add(1)
					firstErr.Do(func() { res.FirstErr = err.Error() })
				}
			}
		}()
	}
	for i := 0; i < n; {
		now := time.Now()
		// Every call whose time has come is due now: a late dispatcher
		// catches up instead of moving the schedule.
		for ; i < n && !start.Add(time.Duration(i)*interval).After(now); i++ {
			due <- i
		}
		if i < n {
			time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		}
	}
	close(due)
	wg.Wait()
	res.Ops, res.Errors, res.Lat = int64(n), errs.Load(), lat
}

func fillRand(rng *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}

// parallel runs fn(0..n-1) on up to k goroutines; the first error stops it.
func parallel(ctx context.Context, k, n int, fn func(int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(1, min(k, n)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}
