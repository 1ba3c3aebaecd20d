package redisstore

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// pipeCounter is a go-redis hook counting pipelines and the largest one.
type pipeCounter struct {
	pipelines, largest atomic.Int64
	// block, when set, holds every single command whose args contain it
	// until release is closed (to keep the pipe busy on purpose).
	block   string
	release chan struct{}
	blocked chan struct{} // receives one value per blocked command
}

func (h *pipeCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h *pipeCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.block != "" {
			for _, a := range cmd.Args() {
				if s, ok := a.(string); ok && strings.Contains(s, h.block) {
					h.blocked <- struct{}{}
					<-h.release
					break
				}
			}
		}
		return next(ctx, cmd)
	}
}

func (h *pipeCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !slices.ContainsFunc(cmds, storeCommand) {
			// go-redis's own pipelines (a new connection's HELLO and
			// CLIENT SETINFO) are not the store's.
			return next(ctx, cmds)
		}
		h.pipelines.Add(1)
		for {
			l := h.largest.Load()
			if int64(len(cmds)) <= l || h.largest.CompareAndSwap(l, int64(len(cmds))) {
				break
			}
		}
		return next(ctx, cmds)
	}
}

// storeCommand reports whether cmd is one the store sends through its pipe.
func storeCommand(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "set", "evalsha", "eval":
		return true
	}
	return false
}

// Many goroutines' first executions and replays share pipelines, on a
// standalone Redis and on a Cluster (where go-redis splits each pipeline
// by node); every key still runs exactly once and replays its own value.
// A lone caller's commands go out one by one, as without the pipe.
func TestPipelineCoalesces(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func(t *testing.T) redis.UniversalClient
	}{
		{"standalone", func(t *testing.T) redis.UniversalClient { return standalone(t) }},
		{"cluster", func(t *testing.T) redis.UniversalClient { return cluster(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := tc.client(t)
			h := &pipeCounter{}
			rdb.AddHook(h)
			s := newStore(t, rdb)
			g := idem.NewGuard(s)
			spec := &idem.Spec{Name: "test.Pipeline", TTL: time.Minute}
			ctx := context.Background()
			var runs sync.Map
			do := func(key string) (string, error) {
				c := g.Begin(spec, key)
				return idem.Do(ctx, c, func(context.Context) (string, error) {
					if _, dup := runs.LoadOrStore(key, true); dup {
						t.Errorf("%s ran twice", key)
					}
					return "v-" + key, nil
				})
			}

			// A lone caller: no pipelines.
			for i := range 20 {
				if v, err := do("lone-" + strconv.Itoa(i)); err != nil || v != "v-lone-"+strconv.Itoa(i) {
					t.Fatalf("lone call %d = %q, %v", i, v, err)
				}
			}
			if n := h.pipelines.Load(); n != 0 {
				t.Fatalf("a lone caller's calls went out in %d pipelines, want none", n)
			}

			const callers, each = 32, 20
			var wg sync.WaitGroup
			for c := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						key := strconv.Itoa(c) + "-" + strconv.Itoa(i)
						for range 2 { // executes, then replays
							if v, err := do(key); err != nil || v != "v-"+key {
								t.Errorf("%s = %q, %v", key, v, err)
								return
							}
						}
					}
				}()
			}
			wg.Wait()
			if h.pipelines.Load() == 0 || h.largest.Load() < 2 {
				t.Fatalf("%d concurrent callers: %d pipelines, largest %d commands; want commands coalesced", callers, h.pipelines.Load(), h.largest.Load())
			}
			t.Logf("%d pipelines, largest %d commands", h.pipelines.Load(), h.largest.Load())
		})
	}
}

// A command whose caller's ctx ended while it waited in the queue is not
// sent: its caller got ctx's error, and the store must change nothing.
func TestPipelineSkipsAbandoned(t *testing.T) {
	rdb := standalone(t)
	h := &pipeCounter{block: ":held", release: make(chan struct{}), blocked: make(chan struct{}, 4)}
	rdb.AddHook(h)
	s := newStore(t, rdb)
	ctx := context.Background()
	claim := func(ctx context.Context, key string) error {
		_, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{1}, Lease: time.Minute, TTL: time.Minute})
		return err
	}
	errs := make(chan error, 1+maxFlushers)
	go func() { errs <- claim(ctx, "a:held") }() // direct, held in the hook
	<-h.blocked
	for i := range maxFlushers { // queued, each sent alone by a flusher, held
		go func() { errs <- claim(ctx, "b"+strconv.Itoa(i)+":held") }()
		<-h.blocked
	}
	cctx, cancel := context.WithCancel(ctx)
	gone := make(chan error, 1)
	go func() { gone <- claim(cctx, "c") }() // queued behind the flusher's send
	eventually(t, func() bool {
		s.pipe.mu.Lock()
		defer s.pipe.mu.Unlock()
		return len(s.pipe.queue) == 1
	})
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned claim = %v, want context.Canceled", err)
	}
	close(h.release)
	for range 1 + maxFlushers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, func() bool {
		s.pipe.mu.Lock()
		defer s.pipe.mu.Unlock()
		return s.pipe.flushers == 0
	})
	if n, err := rdb.Exists(ctx, s.RecordKey("c")).Result(); err != nil || n != 0 {
		t.Fatalf("abandoned claim's key exists: %d, %v; want it never sent", n, err)
	}
}

func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// While a pipeline is in flight, a command that arrives goes out at once in
// a second pipeline of its own instead of waiting for the first one's
// round trip; with maxFlushers in flight, the next one waits in the queue.
func TestPipelineFlushersInFlight(t *testing.T) {
	rdb := standalone(t)
	h := &pipeCounter{block: ":held", release: make(chan struct{}), blocked: make(chan struct{}, 1+maxFlushers)}
	rdb.AddHook(h)
	s := newStore(t, rdb)
	ctx := context.Background()
	claim := func(key string) error {
		_, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{1}, Lease: time.Minute, TTL: time.Minute})
		return err
	}
	errs := make(chan error, 2+maxFlushers)
	go func() { errs <- claim("direct:held") }()
	<-h.blocked
	for i := range maxFlushers {
		go func() { errs <- claim("flushed" + strconv.Itoa(i) + ":held") }()
		select {
		case <-h.blocked:
		case <-time.After(5 * time.Second):
			close(h.release)
			t.Fatalf("claim %d waited behind the %d pipelines in flight, want it sent at once (up to %d in flight)", i+1, i, maxFlushers)
		}
	}
	go func() { errs <- claim("queued") }()
	eventually(t, func() bool {
		s.pipe.mu.Lock()
		defer s.pipe.mu.Unlock()
		return len(s.pipe.queue) == 1
	})
	s.pipe.mu.Lock()
	flushers := s.pipe.flushers
	s.pipe.mu.Unlock()
	if flushers != maxFlushers {
		t.Errorf("%d flushers with the queue waiting, want %d", flushers, maxFlushers)
	}
	close(h.release)
	for range 2 + maxFlushers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
