package stormtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// QueueSize is the shape of a queue storm.
type QueueSize struct {
	Messages   int           // message IDs, evt-0 to evt-(Messages-1)
	DupEvery   int           // every DupEvery-th message is sent twice
	Procs      int           // worker processes running at a time
	Goroutines int           // handler goroutines per process
	Kills      int           // SIGKILLs inside a handler
	NackEvery  uint32        // 1 in NackEvery IDs fails its first run
	Hold       time.Duration // a handler holds Hold/2 to 2*Hold
	PublishFor time.Duration // the sends spread over it, and the kills
}

// QueueSizeFromEnv is the short storm of make test, or the full one with
// IDEM_RELIABILITY=full.
func QueueSizeFromEnv() QueueSize {
	if Full() {
		return QueueSize{Messages: 2000, DupEvery: 4, Procs: 4, Goroutines: 4, Kills: 12, NackEvery: 10,
			Hold: 20 * time.Millisecond, PublishFor: 20 * time.Second}
	}
	return QueueSize{Messages: 120, DupEvery: 4, Procs: 3, Goroutines: 3, Kills: 3, NackEvery: 10,
		Hold: 20 * time.Millisecond, PublishFor: 2 * time.Second}
}

// Queue is what a queue storm needs of its broker. Its workers print
// "run id=..." as a handler starts and "outcome ..." lines (in the
// adapter's own format) as deliveries settle.
type Queue struct {
	Size   QueueSize
	Worker any // the configuration every worker process gets
	// Publish sends message n with the stable message ID id.
	Publish func(ctx context.Context, id string, n int) error
	// Pending counts the messages still in the queue.
	Pending func() int
	// Ledger is the side effects per message ID so far.
	Ledger func() map[string]int
	// Quiet is how long a stray redelivery may take to land: waited, once
	// settled, before the workers stop.
	Quiet time.Duration
	// Drain is waited after the workers stop, before Pending is read
	// again (an unacked delivery returns to the queue then).
	Drain time.Duration
}

// QueueResult is what a queue storm saw.
type QueueResult struct {
	Tally
	DupSends, Kills int
	Outcomes        []string // every outcome line of every worker process
	Took            time.Duration
}

// queueProc is a worker process and the lines it printed.
type queueProc struct {
	*Proc
	runs chan string // "run" lines, dropped when nobody reads
	mu   sync.Mutex
	outs []string
}

func startQueueWorker(t *testing.T, q Queue) *queueProc {
	p := &queueProc{runs: make(chan string, 1)}
	p.Proc = Start(t, q.Worker, func(line string) {
		switch {
		case strings.HasPrefix(line, "run "):
			select {
			case p.runs <- line:
			default:
			}
		case strings.HasPrefix(line, "outcome "):
			p.mu.Lock()
			p.outs = append(p.outs, line)
			p.mu.Unlock()
		}
	})
	return p
}

// RunQueue is the queue storm: a producer sends every message with a
// stable ID (every DupEvery-th twice, as a retrying producer would, half
// at once and half at the end) while Procs worker processes consume; the
// storm SIGKILLs workers inside handlers and starts replacements. Once
// every ID is in the ledger and the queue is empty it waits Quiet, stops
// the workers, and checks that the ledger holds exactly one side effect
// per message ID and that nothing is left in the queue.
func RunQueue(ctx context.Context, t *testing.T, q Queue) QueueResult {
	t.Helper()
	sz := q.Size
	var procs, retired []*queueProc
	for range sz.Procs {
		procs = append(procs, startQueueWorker(t, q))
	}
	start := time.Now()

	res := QueueResult{}
	var order, late []int
	for i := range sz.Messages {
		order = append(order, i)
		if i%sz.DupEvery == 0 {
			res.DupSends++
			if i%(2*sz.DupEvery) == 0 {
				order = append(order, i)
			} else {
				late = append(late, i)
			}
		}
	}
	order = append(order, late...)
	pubErr := make(chan error, 1)
	go func() {
		defer close(pubErr)
		pause := sz.PublishFor / time.Duration(len(order)/10+1)
		for k, i := range order {
			if err := q.Publish(ctx, fmt.Sprintf("evt-%d", i), i); err != nil {
				pubErr <- err
				return
			}
			if k%10 == 9 {
				time.Sleep(pause)
			}
		}
	}()

	// Kill workers inside a handler: wait for a "run" line, SIGKILL at
	// once, start a replacement.
	for res.Kills < sz.Kills && ctx.Err() == nil {
		time.Sleep(sz.PublishFor / time.Duration(sz.Kills+1))
		victim := rand.N(len(procs))
		p := procs[victim]
		select {
		case <-p.runs:
		case <-time.After(10 * time.Second):
			t.Fatalf("worker %d ran no handler for 10s (after %d kills)", p.Pid(), res.Kills)
		}
		p.Stop(syscall.SIGKILL)
		res.Kills++
		procs[victim] = startQueueWorker(t, q)
		retired = append(retired, p)
	}
	if err := <-pubErr; err != nil {
		t.Fatalf("publish: %v", err)
	}

	for len(q.Ledger()) < sz.Messages || q.Pending() > 0 {
		if ctx.Err() != nil {
			t.Fatalf("not settled: %d of %d messages in the ledger, %d in the queue", len(q.Ledger()), sz.Messages, q.Pending())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(q.Quiet)
	for _, p := range procs {
		p.Stop(syscall.SIGTERM)
	}
	res.Took = time.Since(start)
	time.Sleep(q.Drain)
	left := q.Pending()

	got := q.Ledger()
	ids := make([]string, sz.Messages)
	for i := range ids {
		ids[i] = fmt.Sprintf("evt-%d", i)
	}
	res.Tally = Count(ids, got)
	for _, id := range res.LostIDs {
		t.Errorf("%s: no side effect", id)
	}
	for _, id := range res.DupIDs {
		t.Errorf("%s: %d side effects", id, got[id])
	}
	if len(got) != sz.Messages {
		t.Errorf("ledger has %d IDs, want %d", len(got), sz.Messages)
	}
	if left != 0 {
		t.Errorf("%d messages left in the queue after every worker stopped (unacked or never consumed)", left)
	}
	for _, p := range append(retired, procs...) {
		p.mu.Lock()
		res.Outcomes = append(res.Outcomes, p.outs...)
		p.mu.Unlock()
	}
	return res
}
