package reliability

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// The streams scenario on the memory store, which lives in one process:
// the "processes" are Guards over one memory store, and a process dies
// when its store handle does (mortalStore): from then on none of its
// calls reaches the store, as after a SIGKILL, so its producer's lease
// runs out and another process's reader takes the stream over.

// errDead is what a dead process's store calls get.
var errDead = errors.New("reliability: this process is dead")

// mortalStore is one process's handle on the shared memory store.
type mortalStore struct {
	*memstore.Store
	dead atomic.Bool
	die  func() // ends the process's readers
}

func (m *mortalStore) InProcess() bool { return false }

func (m *mortalStore) alive() error {
	if m.dead.Load() {
		return errDead
	}
	return nil
}

func (m *mortalStore) Claim(ctx context.Context, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	if err := m.alive(); err != nil {
		return idemstore.ClaimResult{}, err
	}
	return m.Store.Claim(ctx, req)
}

func (m *mortalStore) Heartbeat(ctx context.Context, l idemstore.Lease) error {
	if err := m.alive(); err != nil {
		return err
	}
	return m.Store.Heartbeat(ctx, l)
}

func (m *mortalStore) Complete(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	if err := m.alive(); err != nil {
		return err
	}
	return m.Store.Complete(ctx, l, r)
}

func (m *mortalStore) Fail(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	if err := m.alive(); err != nil {
		return err
	}
	return m.Store.Fail(ctx, l, r)
}

func (m *mortalStore) Release(ctx context.Context, l idemstore.Lease) error {
	if err := m.alive(); err != nil {
		return err
	}
	return m.Store.Release(ctx, l)
}

func (m *mortalStore) AppendItem(ctx context.Context, l idemstore.Lease, seq uint64, data []byte) error {
	if err := m.alive(); err != nil {
		return err
	}
	return m.Store.AppendItem(ctx, l, seq, data)
}

func (m *mortalStore) ReadStream(ctx context.Context, req idemstore.StreamRead) (idemstore.StreamBatch, error) {
	if err := m.alive(); err != nil {
		return idemstore.StreamBatch{}, err
	}
	return m.Store.ReadStream(ctx, req)
}

// reliabilityFull says whether the full sizes run (make reliability).
func reliabilityFull() bool { return os.Getenv("IDEM_RELIABILITY") == "full" }

// TestReliabilityMemoryStreams is the streams row of the memory store.
func TestReliabilityMemoryStreams(t *testing.T) {
	sz := levelSizes(reliabilityFull())
	record(t, memoryStreams(t, sz))
}

func memoryStreams(t *testing.T, sz sizes) row {
	start := time.Now()
	v := &violations{}
	shared := memstore.New()
	keys := numbered("memory/stream/", sz.streamKeys)
	var (
		mu       sync.Mutex
		recs     []streamRecord
		producer atomic.Pointer[mortalStore]
		wg       sync.WaitGroup
	)
	// process starts a process with a reader per key in ks, each at a
	// random moment within spread.
	process := func(ks []string, spread time.Duration) {
		ctx, cancel := context.WithCancel(context.Background())
		ms := &mortalStore{Store: shared, die: cancel}
		g := idem.NewGuard(ms)
		produce := produceItems(sz.streamItems, func(uint64) func() {
			producer.Store(ms)
			return func() { producer.CompareAndSwap(ms, nil) }
		})
		for _, k := range ks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(rand.N(spread + 1))
				rec := readStream(ctx, g, k, 0.01, produce)
				if !ms.dead.Load() { // a dead process's readers died with it
					mu.Lock()
					recs = append(recs, rec)
					mu.Unlock()
				}
			}()
		}
	}
	readers := shuffled(keys, sz.streamReaders)
	for i := range sz.streamProcs {
		var ks []string
		for j := i; j < len(readers); j += sz.streamProcs {
			ks = append(ks, readers[j])
		}
		process(ks, 2*time.Second)
	}
	for range sz.streamKills {
		deadline := time.Now().Add(10 * time.Second)
		for producer.Load() == nil && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(sz.streamItems) * streamItemGap * time.Duration(20+rand.N(60)) / 100)
		p := producer.Swap(nil)
		if p == nil {
			v.add("no producer to kill")
			break
		}
		p.dead.Store(true)
		p.die()
		process(keys, 0)
	}
	wg.Wait()
	g := idem.NewGuard(shared)
	var last []streamRecord
	for _, k := range keys {
		last = append(last, readStream(context.Background(), g, k, 0, produceItems(sz.streamItems, func(uint64) func() { return func() {} })))
	}
	return streamsScenario{"memory", "streams (process death, in process)", "Guards", "deaths", "of the dead Guards"}.
		row(v, recs, last, sz, len(readers), start)
}
