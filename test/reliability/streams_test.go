package reliability

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
)

// Streams: a streaming function of streamItems items per key, read by
// many readers in several processes that attach at random moments, drop
// their connection now and then and resume from their cursor, while the
// harness SIGKILLs the process that produces. Every reader that finishes
// must have read exactly one run's items, in order, without a gap or a
// repeat, and every reader of a key the same run as a fresh reader after
// the end.

// streamSpec is the streamed function: a short lease, so a killed
// producer's run is taken over within a second.
var streamSpec = idem.Spec{Name: "rel.stream", Lease: time.Second, TTL: time.Hour, OnDuplicate: idem.DuplicateWait}

// streamItem is one item: the run (fence) and the process that produced
// it, and its place in the run.
type streamItem struct {
	Run uint64 `json:"run"`
	Seq int    `json:"seq"`
	PID int    `json:"pid"`
}

// streamRecord is what one reader saw.
type streamRecord struct {
	Key      string   `json:"key"`
	Run      uint64   `json:"run"`   // the run it read to the end; 0: it did not finish
	Items    int      `json:"items"` // how many it read of that run
	Restarts int      `json:"restarts"`
	Resumes  int      `json:"resumes"`
	Errors   []string `json:"errors,omitempty"`
	Bad      []string `json:"bad,omitempty"` // gaps, repeats, runs spliced
}

// streamItemGap is how long the producer takes per item.
const streamItemGap = 5 * time.Millisecond

// streamReader returns the worker's call for role stream: it reads the
// key's stream to its end (dropping and resuming with probability drop
// per item) and keeps its record in recs.
func streamReader(g *idem.Guard, items int, drop float64, recs *[]streamRecord, mu *sync.Mutex) func(context.Context, string) error {
	return func(ctx context.Context, key string) error {
		rec := readStream(ctx, g, key, drop, produceItems(items, func(fence uint64) func() {
			mark("producing", key, fence)
			return func() {}
		}))
		mu.Lock()
		*recs = append(*recs, rec)
		mu.Unlock()
		if rec.Run == 0 {
			return fmt.Errorf("the stream did not finish: %v", rec.Errors)
		}
		return nil
	}
}

// produceItems is the streamed function; it calls producing as it
// starts a run, and what that returns as the run ends.
func produceItems(items int, producing func(fence uint64) (ended func())) func(context.Context, func(streamItem) bool) error {
	return func(ctx context.Context, yield func(streamItem) bool) error {
		fence, _ := idem.FenceFrom(ctx)
		defer producing(fence)()
		for i := range items {
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(streamItemGap):
			}
			if !yield(streamItem{Run: fence, Seq: i, PID: os.Getpid()}) {
				return nil
			}
		}
		return nil
	}
}

// readStream reads key's stream to its end, resuming from its cursor
// after a drop or an error, and starting over after a restart.
func readStream(ctx context.Context, g *idem.Guard, key string, drop float64, produce func(context.Context, func(streamItem) bool) error) streamRecord {
	rec := streamRecord{Key: key}
	cur := &idem.StreamCursor{}
	var got []streamItem
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		ended, stopped := true, false
		for it, err := range idem.Stream(idem.StreamFrom(ctx, cur), g.Begin(&streamSpec, key), produce) {
			if errors.Is(err, idem.ErrStreamRestarted) {
				rec.Restarts++
				got, ended = got[:0], false
				break
			}
			if err != nil {
				if len(rec.Errors) < 5 {
					rec.Errors = append(rec.Errors, err.Error())
				}
				ended = false
				break
			}
			if it.Seq != len(got) || len(got) > 0 && it.Run != got[0].Run || it.Run != cur.Run || cur.Next != uint64(len(got)+1) {
				rec.Bad = append(rec.Bad, fmt.Sprintf("after %d items of run %d: item %d of run %d (cursor %d/%d)",
					len(got), runOf(got), it.Seq, it.Run, cur.Run, cur.Next))
			}
			got = append(got, it)
			if rand.Float64() < drop {
				rec.Resumes++
				ended, stopped = false, true
				break
			}
		}
		if ended {
			rec.Run, rec.Items = runOf(got), len(got)
			return rec
		}
		if !stopped {
			time.Sleep(20*time.Millisecond + rand.N(80*time.Millisecond))
		}
	}
	return rec
}

func runOf(items []streamItem) uint64 {
	if len(items) == 0 {
		return 0
	}
	return items[0].Run
}

// streams is the scenario's row for store.
func (h *harness) streams(t *testing.T, store string, sz sizes) row {
	prefix := fmt.Sprintf("%s/stream/", store)
	start := time.Now()
	v := &violations{}
	keys := numbered(prefix, sz.streamKeys)
	readers := shuffled(keys, sz.streamReaders)
	worker := func(ks []string) *proc {
		cfg := h.base(store, "stream", "")
		cfg.Keys, cfg.Goroutines, cfg.Spread = ks, len(ks), 2*time.Second
		cfg.StreamItems, cfg.StreamDrop = sz.streamItems, 0.01
		return h.start(t, cfg)
	}
	var procs []*proc
	for i := range sz.streamProcs {
		var ks []string
		for j := i; j < len(readers); j += sz.streamProcs {
			ks = append(ks, readers[j])
		}
		procs = append(procs, worker(ks))
	}
	waitReady(v, procs)
	killed := map[*proc]bool{}
	for range sz.streamKills {
		p := producer(procs, killed, 10*time.Second)
		if p == nil {
			v.add("no producer to kill: every key had finished")
			break
		}
		time.Sleep(time.Duration(sz.streamItems) * streamItemGap * time.Duration(20+rand.N(60)) / 100)
		p.signal(syscall.SIGKILL)
		<-p.done
		killed[p] = true
		// The readers it took with it are replaced by as many late ones.
		late := worker(keys)
		waitReady(v, []*proc{late})
		procs = append(procs, late)
	}
	var recs []streamRecord
	var live []*proc
	for _, p := range procs {
		if !killed[p] {
			live = append(live, p)
		}
	}
	collect(v, live, func(r workerReport) { recs = append(recs, r.Streams...) })
	cfg := h.base(store, "stream", "")
	cfg.Keys, cfg.Goroutines, cfg.StreamItems = keys, len(keys), sz.streamItems
	final, err := h.start(t, cfg).wait(2 * time.Minute)
	if err != nil {
		v.add("the fresh reader after the end: %v", err)
	}
	return streamsScenario{store, "streams (SIGKILL of the producer)", "processes", "kills", "in the killed processes"}.
		row(v, recs, final.Streams, sz, len(readers), start)
}

// streamsScenario names a streams scenario's row: its producers die
// (deaths) in one of the hosts (Guards or processes) the readers are in,
// and the readers of the dead hosts (dead) die with them.
type streamsScenario struct{ store, scenario, hosts, deaths, dead string }

// row checks the readers' records, recs, against final (a fresh reader's
// after the end) and reports the scenario, begun at start.
func (s streamsScenario) row(v *violations, recs, final []streamRecord, sz sizes, readers int, start time.Time) row {
	restarts, resumes := checkStreams(v, recs, final, sz.streamItems)
	return row{
		Store: s.store, Scenario: s.scenario,
		Trials: fmt.Sprintf("%d keys × %d items, %d readers in %d %s (+%d late), %d producer %s",
			sz.streamKeys, sz.streamItems, readers, sz.streamProcs, s.hosts, sz.streamKills, sz.streamKills, s.deaths),
		Expected: "every reader: one run's items, in order, no gap, no repeat; all readers of a key the same run",
		Observed: fmt.Sprintf("%d readers finished (those %s died with them); %d restarts told, %d resumes from a cursor",
			len(recs), s.dead, restarts, resumes),
		v: v, took: time.Since(start),
	}
}

// producer waits for a live process's producing marker, the newest, and
// returns that process.
func producer(procs []*proc, killed map[*proc]bool, timeout time.Duration) *proc {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		var best *proc
		var at time.Time
		for _, p := range procs {
			if killed[p] {
				continue
			}
			p.mu.Lock()
			for _, m := range p.marks {
				if m.phase == "producing" && m.at.After(at) {
					best, at = p, m.at
				}
			}
			p.mu.Unlock()
		}
		if best != nil && time.Since(at) < time.Duration(200)*streamItemGap {
			return best
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// checkStreams adds a violation for every reader that saw a gap, a repeat
// or two runs spliced, did not finish, finished short, or finished with a
// run other than the fresh reader's; it returns the restarts and resumes
// the readers saw.
func checkStreams(v *violations, recs, final []streamRecord, items int) (restarts, resumes int) {
	runs := map[string]uint64{}
	for _, r := range final {
		if r.Run == 0 || r.Items != items || len(r.Bad) > 0 {
			v.add("%s: the fresh reader after the end: run %d, %d items, %v %v", r.Key, r.Run, r.Items, r.Bad, r.Errors)
		}
		runs[r.Key] = r.Run
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Key < recs[j].Key })
	for _, r := range recs {
		restarts += r.Restarts
		resumes += r.Resumes
		for _, b := range r.Bad {
			v.add("%s: %s", r.Key, b)
		}
		switch {
		case r.Run == 0:
			v.add("%s: a reader did not finish: %v", r.Key, r.Errors)
		case r.Items != items:
			v.add("%s: a reader finished run %d with %d items, want %d", r.Key, r.Run, r.Items, items)
		case r.Run != runs[r.Key]:
			v.add("%s: a reader finished run %d, the fresh reader run %d", r.Key, r.Run, runs[r.Key])
		}
	}
	return restarts, resumes
}
