// Package stormtest is the broker redelivery storm the adapter modules
// (runtime/idemkafka, runtime/idemamqp, runtime/idemsqs) share: the test
// binary re-executed as worker processes, their stdout read line by line,
// the ledger of side effects counted per message ID, the queue storm
// (publish, SIGKILL workers inside handlers, settle) and the report row.
// Each adapter's storm_test.go keeps what is its broker's: how to
// publish, consume, count what is left, and its adapter's options.
//
// It lives in the root module's internal/ (like testenv) so that every
// nested module can import it through its replace of the root module,
// without a module of its own or an exported API for users.
package stormtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// workerEnv carries a worker process's JSON configuration.
const workerEnv = "IDEM_STORM_WORKER"

// Main lets the test binary double as a storm worker process: when the
// environment holds a JSON configuration, it runs run with it until SIGTERM or
// interrupt and exits; otherwise it runs the tests. A worker whose run
// ends with its context's cancellation exits 0.
func Main[C any](m *testing.M, run func(context.Context, C) error) {
	raw := os.Getenv(workerEnv)
	if raw == "" {
		os.Exit(m.Run())
	}
	var cfg C
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "worker config:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := run(ctx, cfg)
	stop()
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Context is the storm's context: it ends after d, or with the test.
func Context(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

var sayMu sync.Mutex

// Say prints one line to the worker's stdout, where the storm reads it;
// safe for concurrent use.
func Say(format string, a ...any) {
	sayMu.Lock()
	defer sayMu.Unlock()
	fmt.Fprintf(os.Stdout, format+"\n", a...)
}

// Hold is a random handler duration in [lo, hi).
func Hold(lo, hi time.Duration) time.Duration {
	if hi > lo {
		return lo + rand.N(hi-lo)
	}
	return lo
}

// Hash picks 1 in n message IDs the same way in every process: Hash(id)%n == 0.
func Hash(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// Full reports IDEM_RELIABILITY=full: the storm's long shape, not the
// short one make test runs.
func Full() bool { return os.Getenv("IDEM_RELIABILITY") == "full" }

// Level is "full" or "short", for the report.
func Level() string {
	if Full() {
		return "full"
	}
	return "short"
}

// Proc is one worker process: the test binary run with its configuration
// in an environment variable.
type Proc struct {
	Cmd  *exec.Cmd
	done chan struct{}
}

// Start starts a worker process with cfg (as JSON) and calls line
// with every line it prints, from one goroutine, until its stdout closes.
// The test's cleanup kills it if it is still running.
func Start(t testing.TB, cfg any, line func(string)) *Proc {
	t.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"="+string(raw))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Proc{Cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line(sc.Text())
		}
	}()
	t.Cleanup(func() {
		if p.Cmd.ProcessState == nil {
			p.Cmd.Process.Kill() //nolint:errcheck
			<-p.done
			p.Cmd.Wait() //nolint:errcheck
		}
	})
	return p
}

// Done is closed once the process's stdout is closed (it has exited).
func (p *Proc) Done() <-chan struct{} { return p.done }

// Pid is the process's ID.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Kill sends SIGKILL without waiting.
func (p *Proc) Kill() { p.Cmd.Process.Signal(syscall.SIGKILL) } //nolint:errcheck

// Term sends SIGTERM without waiting.
func (p *Proc) Term() { p.Cmd.Process.Signal(syscall.SIGTERM) } //nolint:errcheck

// Stop sends sig (SIGTERM, or SIGKILL) and waits for the process to exit.
func (p *Proc) Stop(sig syscall.Signal) {
	p.Cmd.Process.Signal(sig) //nolint:errcheck
	<-p.done
	p.Cmd.Wait() //nolint:errcheck
}

// Summary is what the ledger says: side effects in all, side effects
// beyond the first of a message ID, and message IDs without one.
type Summary struct{ Effects, Duplicates, Lost int }

// Tally is the ledger counted against the message IDs sent.
type Tally struct {
	Summary
	DupIDs, LostIDs []string
}

// Count counts ledger (side effects per message ID) against ids.
func Count(ids []string, ledger map[string]int) Tally {
	var c Tally
	for _, id := range ids {
		n := ledger[id]
		c.Effects += n
		switch {
		case n == 0:
			c.Lost++
			c.LostIDs = append(c.LostIDs, id)
		case n > 1:
			c.Duplicates += n - 1
			c.DupIDs = append(c.DupIDs, id)
		}
	}
	return c
}

// Row is one broker's line of the storm report.
type Row struct {
	Broker              string
	Messages, DupSends  int
	Forced              string // the redeliveries the storm forced
	Redelivered         int    // the redeliveries observed
	Effects, Dups, Lost int
	Notes               string
}

// Report appends row to the file IDEM_RELIABILITY_REPORT_BROKERS names
// (make reliability-brokers), with the table's header when the file has
// none yet. A failed test writes its row only when the ledger shows
// duplicates or losses: a storm that broke down proves nothing.
func Report(t *testing.T, row Row) {
	path := os.Getenv("IDEM_RELIABILITY_REPORT_BROKERS")
	if path == "" || t.Failed() && row.Dups == 0 && row.Lost == 0 {
		return
	}
	prev, _ := os.ReadFile(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Errorf("broker report: %v", err)
		return
	}
	defer f.Close()
	if !strings.Contains(string(prev), "| broker |") {
		fmt.Fprintf(f, "| broker | size | messages | duplicate sends | forced redeliveries | redeliveries observed | side effects | duplicates | lost | notes |\n|---|---|---|---|---|---|---|---|---|---|\n")
	}
	fmt.Fprintf(f, "| %s | %s | %d | %d | %s | %d | %d | %d | %d | %s (%s) |\n", row.Broker, Level(), row.Messages, row.DupSends,
		row.Forced, row.Redelivered, row.Effects, row.Dups, row.Lost, row.Notes, time.Now().UTC().Format("2006-01-02 15:04 MST"))
}
