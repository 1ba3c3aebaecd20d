package idem

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// flightTable tracks the calls this process is executing, so same-key
// callers in the process are answered without asking the store. A Guard
// over an in-process store (InProcess) keeps no flights: asking its store
// is as cheap, and the store answers the same (it keeps the decoded value
// and wakes waiters itself), so the table would cost every first
// execution two locked map operations for nothing.
type flightTable struct {
	// active counts running flights: while none run, which is the common
	// case for a replay, get skips the lookup altogether.
	active atomic.Int64
	shards [32]struct {
		mu sync.RWMutex
		m  map[string]*flight
	}
}

// flight is a call this process is executing, as same-key callers see it.
type flight struct {
	fp Fingerprint
	// spec is the running function's: a same-key caller of another
	// function that shares its name (ErrFunctionMismatch) is not handed
	// its value.
	spec *Spec
	mu   sync.Mutex
	// done is made by the first caller that waits, so an execution nobody
	// waits on (almost all) makes no channel; finish closes it.
	done  chan struct{}
	ended bool
	// Set before ended. shared: value and err are the recorded outcome
	// and may be handed to waiting duplicates.
	shared bool
	value  any
	err    error
}

// closedChan is what wait returns for a flight that has ended.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// wait returns a channel closed when f ends; f's outcome fields may be
// read once it is.
func (f *flight) wait() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return closedChan
	}
	if f.done == nil {
		f.done = make(chan struct{})
	}
	return f.done
}

// execution is what one owned call keeps in process while fn runs, in a
// single allocation: its flight, its heartbeat and what fn's ctx carries.
type execution struct {
	flight
	hb     heartbeat
	run    running
	ctx    runCtx          // fn's
	rctx   context.Context // &ctx, boxed once
	cancel context.CancelCauseFunc
}

func (t *flightTable) init() {
	for i := range t.shards {
		t.shards[i].m = make(map[string]*flight)
	}
}

func (t *flightTable) shard(key string) int { return int(tailHash(key) % uint32(len(t.shards))) }

// tailHash hashes the last 32 bytes of a key (with the runtime's AES-based
// map hash). Guard keys end in the hex of a SHA-256, so their tails are
// already uniform, and other keys mostly differ at the end; hashing whole
// keys cost a replay more than its map lookups.
func tailHash(key string) uint32 {
	return uint32(maphash.String(shardSeed, key[len(key)-min(len(key), 32):]))
}

// shardSeed seeds tailHash: shard choice is per process and never stored.
var shardSeed = maphash.MakeSeed()

func (t *flightTable) get(key string) *flight {
	if t.active.Load() == 0 {
		return nil
	}
	s := &t.shards[t.shard(key)]
	s.mu.RLock()
	f := s.m[key]
	s.mu.RUnlock()
	return f
}

// add makes f the key's flight.
func (t *flightTable) add(key string, f *flight) {
	s := &t.shards[t.shard(key)]
	t.active.Add(1)
	s.mu.Lock()
	s.m[key] = f
	s.mu.Unlock()
}

// startFlight makes f the key's flight if the Guard keeps flights.
func (g *Guard) startFlight(key string, f *flight) {
	if !g.inProcess {
		g.flights.add(key, f)
	}
}

// endFlight ends f, the key's flight if the Guard keeps flights.
func (g *Guard) endFlight(key string, f *flight, shared bool, value any, err error) {
	if !g.inProcess {
		g.flights.finish(key, f, shared, value, err)
	}
}

func (t *flightTable) finish(key string, f *flight, shared bool, value any, err error) {
	s := &t.shards[t.shard(key)]
	s.mu.Lock()
	if s.m[key] == f {
		delete(s.m, key)
	}
	s.mu.Unlock()
	t.active.Add(-1)
	f.mu.Lock()
	f.shared, f.value, f.err, f.ended = shared, value, err, true
	if f.done != nil {
		close(f.done)
	}
	f.mu.Unlock()
}
