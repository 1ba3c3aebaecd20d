package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/filestore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/test/internal/workerproc"
	"github.com/idemgen/idemgen/test/reliability/work"
)

// workerEnv carries a worker's JSON configuration.
const workerEnv = "IDEM_REL_WORKER"

// workerConfig is what the harness tells one worker process to do.
type workerConfig struct {
	// Role: storm, crash, recover, zombie, contend, skew, steps, stream,
	// steps-recover, reshard (reshard_test.go).
	Role string
	// Store: redis, postgres, file. StoreAddr is the Redis address or the
	// Postgres URL (possibly a FaultProxy's), FileDir the file store's
	// directory; RedisPrefix and PGSchema separate the run's records.
	Store       string
	StoreAddr   string
	FileDir     string
	RedisPrefix string
	PGSchema    string
	// FaultTolerant shortens client timeouts so calls fail fast through a
	// faulty network instead of hanging for the clients' defaults.
	FaultTolerant bool

	LedgerURL    string
	LedgerSchema string

	// Keys are the deliveries, in this worker's order (storm: with
	// repeats), processed by Goroutines goroutines.
	Keys       []string
	Goroutines int
	// Hold is the range of time the function runs after its ledger row.
	HoldMin, HoldMax time.Duration
	// PreClaimMax delays each call by up to this much (crash: to be
	// killed before the claim); CompleteDelayMax delays completions.
	PreClaimMax      time.Duration
	CompleteDelayMax time.Duration
	// Clock offset of the Guard (idem.WithClock); ClockJump makes it
	// a different random offset within ±ClockOffset at every reading.
	ClockOffset time.Duration
	ClockJump   bool
	// StoreClock also gives the skewed clock to a store that takes a
	// client clock (pgstore.WithClock, a test-only option): leases are
	// then judged by each process's own clock, which the harness's
	// self-test shows breaks exclusivity under skew.
	StoreClock bool
	// Broken wraps the store in BrokenStore: "leaselost" ignores lost
	// leases, "flatfence" hides fences.
	Broken string
	// Spread starts each key at a random moment within this long after
	// the worker is ready (instead of as fast as goroutines free up), so
	// calls keep starting all through a fault window.
	Spread time.Duration
	// Retry: contend and skew retry a key until it succeeds or Deadline.
	Deadline    time.Duration
	CallTimeout time.Duration

	Output string

	// Failover rows (failover_test.go): the deployment's addresses (the
	// Sentinels, or the Cluster's nodes), and whether the store waits for
	// replica acknowledgements (with clock fences); RetryErrors retries a
	// call that failed, as contend does, until Deadline.
	FailoverAddrs []string
	ReplicaAcks   bool
	RetryErrors   bool

	// ClusterAddrs: the resharding rows' Cluster (reshard_test.go).
	ClusterAddrs []string

	// Streams (streams_test.go): the items of the streamed function, and
	// the chance per item that a reader drops and resumes.
	StreamItems int
	StreamDrop  float64
}

// callRecord is one call as the worker saw it.
type callRecord struct {
	Key   string       `json:"key"`
	Class string       `json:"class"`
	Err   string       `json:"err,omitempty"`
	Out   work.Outcome `json:"out"`
	Start time.Time    `json:"start"`
	End   time.Time    `json:"end"`
}

// workerReport is what a worker writes to its Output file when it ends.
type workerReport struct {
	PID    int            `json:"pid"`
	Calls  []callRecord   `json:"calls"`
	Events map[string]int `json:"events"` // observer outcomes, by name
	// Streams: what each reader of role stream saw.
	Streams []streamRecord `json:"streams,omitempty"`
}

// TestWorkerProcess is the entry point of a worker process; without the
// worker environment variable it does nothing.
func TestWorkerProcess(t *testing.T) {
	var cfg workerConfig
	workerproc.Load(t, workerEnv, &cfg)
	if err := runWorker(cfg); err != nil {
		t.Fatalf("worker %s: %v", cfg.Role, err)
	}
}

var markMu sync.Mutex

// mark prints a progress marker for the harness, which times its signals
// by them.
func mark(phase, key string, fence uint64) {
	markMu.Lock()
	fmt.Fprintf(os.Stdout, "IDEMREL %s %s %d\n", phase, key, fence)
	markMu.Unlock()
}

func openStore(ctx context.Context, cfg workerConfig) (idemstore.Store, func(), error) {
	if st, closeFn, ok, err := openFailoverStore(ctx, cfg); ok {
		return st, closeFn, err
	}
	if st, closeFn, ok, err := openReshardStore(ctx, cfg); ok {
		return st, closeFn, err
	}
	switch cfg.Store {
	case "redis":
		opt := &redis.Options{Addr: cfg.StoreAddr, PoolSize: 16}
		if cfg.FaultTolerant {
			opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
			opt.PoolTimeout, opt.MaxRetries = 500*time.Millisecond, 2
		}
		rdb := redis.NewClient(opt)
		st, err := redisstore.New(ctx, rdb, redisstore.WithKeyPrefix(cfg.RedisPrefix),
			redisstore.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))))
		if err != nil {
			rdb.Close()
			return nil, nil, err
		}
		return st, func() { st.Close(); rdb.Close() }, nil
	case "postgres":
		pc, err := pgxpool.ParseConfig(cfg.StoreAddr)
		if err != nil {
			return nil, nil, err
		}
		pc.MaxConns = 5
		if cfg.FaultTolerant {
			pc.ConnConfig.ConnectTimeout = time.Second
		}
		pool, err := pgxpool.NewWithConfig(ctx, pc)
		if err != nil {
			return nil, nil, err
		}
		opts := []pgstore.Option{pgstore.WithSchema(cfg.PGSchema)}
		if cfg.StoreClock {
			opts = append(opts, pgstore.WithClock(skewedClock(cfg.ClockOffset, cfg.ClockJump)))
		}
		if cfg.FaultTolerant {
			opts = append(opts, pgstore.WithAcquireTimeout(time.Second), pgstore.WithPollInterval(100*time.Millisecond))
		}
		st, err := pgstore.New(ctx, pool, opts...)
		if err != nil {
			pool.Close()
			return nil, nil, err
		}
		return st, func() { st.Close(); pool.Close() }, nil
	case "dynamo", "firestore":
		return openDocStore(ctx, cfg) // docstores_test.go
	case "file":
		st, err := filestore.New(cfg.FileDir)
		if err != nil {
			return nil, nil, err
		}
		return st, func() {}, nil
	}
	return nil, nil, fmt.Errorf("unknown store %q", cfg.Store)
}

func runWorker(cfg workerConfig) error {
	ctx := context.Background()
	lpc, err := pgxpool.ParseConfig(cfg.LedgerURL)
	if err != nil {
		return err
	}
	lpc.MaxConns = 3
	lpool, err := pgxpool.NewWithConfig(ctx, lpc)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	defer lpool.Close()
	store, closeStore, err := openStore(ctx, cfg)
	if err != nil {
		return fmt.Errorf("store %s: %w", cfg.Store, err)
	}
	defer closeStore()
	if cfg.CompleteDelayMax > 0 {
		store = DelayStore{Store: store, Max: cfg.CompleteDelayMax, Mark: mark}
	}
	if cfg.Broken != "" {
		store = &BrokenStore{Store: store, FlatFence: cfg.Broken == "flatfence"}
	}
	var (
		evMu   sync.Mutex
		events = map[string]int{}
	)
	opts := []idem.Option{idem.WithObserver(idem.ObserverFunc(func(e idem.Event) {
		name := e.Outcome.String()
		if e.Outcome == idem.OutcomeStoreError {
			// A store error before ownership is a failed claim (or
			// wait); with a fence, a failed complete or release.
			if e.Fence == 0 {
				name += "@claim"
			} else {
				name += "@write"
			}
		}
		evMu.Lock()
		events[name]++
		evMu.Unlock()
	}))}
	if cfg.ClockOffset != 0 {
		opts = append(opts, idem.WithClock(skewedClock(cfg.ClockOffset, cfg.ClockJump)))
	}
	g := idem.NewGuard(store, opts...)
	hold := func(string) time.Duration {
		if cfg.HoldMax <= cfg.HoldMin {
			return cfg.HoldMin
		}
		return cfg.HoldMin + rand.N(cfg.HoldMax-cfg.HoldMin)
	}
	if cfg.Role == "reshard" {
		hold = reshardHold
	}
	fx := work.NewIdempotentEffects(&work.Effects{
		Ledger: &work.Ledger{Pool: lpool, Schema: cfg.LedgerSchema},
		Hooks:  work.Hooks{Hold: hold, Mark: mark},
	}, g)
	var call func(context.Context, string) (work.Outcome, error)
	var (
		streamMu   sync.Mutex
		streamRecs []streamRecord
	)
	switch cfg.Role {
	case "stream":
		read := streamReader(g, cfg.StreamItems, cfg.StreamDrop, &streamRecs, &streamMu)
		call = func(ctx context.Context, key string) (work.Outcome, error) {
			return work.Outcome{Key: key}, read(ctx, key)
		}
	case "storm":
		call = fx.Storm
	case "crash", "recover":
		call = fx.Crash
	case "steps", "steps-recover":
		call = fx.Steps
	case "zombie":
		call = fx.Zombie
	case "contend":
		call = fx.Contend
	case "skew":
		call = fx.Skew
	case "reshard":
		call = reshardCall(fx)
	default:
		return fmt.Errorf("unknown role %q", cfg.Role)
	}
	retry := cfg.Role == "contend" || cfg.Role == "skew" || cfg.RetryErrors
	mark("ready", "-", 0)

	var (
		mu    sync.Mutex
		calls []callRecord
	)
	one := func(key string) callRecord {
		cctx, cancel := ctx, context.CancelFunc(func() {})
		if cfg.CallTimeout > 0 {
			cctx, cancel = context.WithTimeout(ctx, cfg.CallTimeout)
		}
		defer cancel()
		rec := callRecord{Key: key, Start: time.Now()}
		out, err := call(cctx, key)
		rec.End, rec.Class = time.Now(), Classify(err)
		if err != nil {
			rec.Err = err.Error()
		} else {
			rec.Out = out
		}
		mu.Lock()
		calls = append(calls, rec)
		mu.Unlock()
		return rec
	}
	jobs := make(chan string)
	var wg sync.WaitGroup
	deadline := time.Now().Add(cfg.Deadline)
	for range max(cfg.Goroutines, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for key := range jobs {
				if cfg.PreClaimMax > 0 {
					time.Sleep(rand.N(cfg.PreClaimMax))
				}
				mark("claiming", key, 0)
				for {
					rec := one(key)
					if rec.Class == "ok" || !retry || time.Now().After(deadline) {
						if rec.Class == "ok" {
							mark("done", key, rec.Out.Fence)
						}
						break
					}
					time.Sleep(20*time.Millisecond + rand.N(80*time.Millisecond))
				}
			}
		}()
	}
	if cfg.Spread > 0 {
		var feed sync.WaitGroup
		for _, k := range cfg.Keys {
			feed.Add(1)
			go func() {
				defer feed.Done()
				time.Sleep(rand.N(cfg.Spread))
				jobs <- k
			}()
		}
		feed.Wait()
	} else {
		for _, k := range cfg.Keys {
			jobs <- k
		}
	}
	close(jobs)
	wg.Wait()

	evMu.Lock()
	for k, n := range storeCounts.snapshot() {
		events[k] += n
	}
	streamMu.Lock()
	rep := workerReport{PID: os.Getpid(), Calls: calls, Events: events, Streams: streamRecs}
	streamMu.Unlock()
	b, err := json.Marshal(rep)
	evMu.Unlock()
	if err != nil {
		return err
	}
	if cfg.Output == "" {
		return nil
	}
	// Write then rename: a report file exists only when complete.
	if err := os.WriteFile(cfg.Output+".tmp", b, 0o600); err != nil {
		return err
	}
	return os.Rename(cfg.Output+".tmp", cfg.Output)
}
