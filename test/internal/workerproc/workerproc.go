// Package workerproc runs the capacity and reliability harnesses' worker
// processes: the test binary re-executed with a JSON configuration in an
// environment variable, its stdout lines handed to the harness, its
// stderr kept for the failure message, its JSON result read back.
package workerproc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Load reads a worker process's configuration from env into cfg; in the
// harness's own process (env unset) it skips the test.
func Load(t *testing.T, env string, cfg any) {
	t.Helper()
	raw := os.Getenv(env)
	if raw == "" {
		t.Skip("not a worker process (the harness starts these; no CI dependency)")
	}
	if err := json.Unmarshal([]byte(raw), cfg); err != nil {
		t.Fatalf("worker config: %v", err)
	}
}

// Main runs a harness's tests (m) and then, in the harness's own process
// (env unset) and where reportEnv names a path, writes its report there
// with write; it exits with the tests' code, or 1 where the report (what
// names it) could not be written.
func Main(m *testing.M, env, reportEnv, what string, write func(path string) error) {
	code := m.Run()
	if path := os.Getenv(reportEnv); path != "" && os.Getenv(env) == "" {
		if err := write(path); err != nil {
			fmt.Fprintln(os.Stderr, what+" report:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var seq struct {
	sync.Mutex
	n int
}

// Output is a new file name in dir for a worker's result.
func Output(dir string) string {
	seq.Lock()
	defer seq.Unlock()
	seq.n++
	return filepath.Join(dir, fmt.Sprintf("worker-%d.json", seq.n))
}

// Spec is how to start a worker.
type Spec struct {
	Env     string   // the environment variable that carries Config
	Config  any      // the worker's configuration, as JSON
	Run     string   // the test that is the worker's entry point
	Timeout string   // the worker's -test.timeout
	Output  string   // the file the worker writes its result to
	Extra   []string // more environment
	Stdin   bool     // give the worker a stdin pipe (Proc.Send)
	// Line gets each stdout line; false keeps it with stderr (go test's
	// own output: a failing worker's message).
	Line func(string) bool
}

// Proc is a running worker process.
type Proc struct {
	Cmd    *exec.Cmd
	output string
	stdin  io.WriteCloser
	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan struct{}
	err    error
}

// Start starts the worker; the test's cleanup kills it if it still runs.
func Start(t *testing.T, s Spec) *Proc {
	t.Helper()
	raw, err := json.Marshal(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+s.Run+"$", "-test.count=1", "-test.timeout="+s.Timeout)
	cmd.Env = append(append(os.Environ(), s.Env+"="+string(raw)), s.Extra...)
	p := &Proc{Cmd: cmd, output: s.Output, done: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var r *os.File
	if s.Stdin {
		if r, p.stdin, err = os.Pipe(); err != nil {
			t.Fatal(err)
		}
		cmd.Stdin = r
	}
	cmd.Stderr = writerFunc(func(b []byte) (int, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.stderr.Write(b)
	})
	if err := cmd.Start(); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	if r != nil {
		r.Close()
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if s.Line == nil || !s.Line(sc.Text()) {
				p.mu.Lock()
				p.stderr.WriteString(sc.Text() + "\n")
				p.mu.Unlock()
			}
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.Signal(syscall.SIGCONT)
			p.Signal(syscall.SIGKILL)
			<-p.done
		}
		if p.stdin != nil {
			p.stdin.Close()
		}
	})
	return p
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// Done is closed once the worker has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Pid is the worker's process ID.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Err is the worker's exit error, once Done is closed.
func (p *Proc) Err() error { return p.err }

// Signal sends s to the worker.
func (p *Proc) Signal(s syscall.Signal) { _ = p.Cmd.Process.Signal(s) }

// Send writes a line to the worker's stdin (Spec.Stdin).
func (p *Proc) Send(line string) { _, _ = io.WriteString(p.stdin, line+"\n") }

// StderrTail is the last n bytes of the worker's stderr.
func (p *Proc) StderrTail(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stderr.String()
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// OnTimeout is what Result does to a worker that outlives its timeout.
type OnTimeout syscall.Signal

const (
	// Kill ends it (SIGKILL).
	Kill = OnTimeout(syscall.SIGKILL)
	// Dump ends it with a goroutine dump on its stderr (SIGQUIT), which
	// the error then shows: where it hung.
	Dump = OnTimeout(syscall.SIGQUIT)
)

// Result waits up to timeout for the worker to exit and reads its JSON
// result into v; tail is how much of its stderr an error shows.
func (p *Proc) Result(timeout time.Duration, stop OnTimeout, tail int, v any) error {
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.Signal(syscall.SIGCONT)
		p.Signal(syscall.Signal(stop))
		<-p.done
		return fmt.Errorf("worker %d did not finish within %s; stderr:\n%s", p.Pid(), timeout, p.StderrTail(tail))
	}
	if p.err != nil {
		return fmt.Errorf("worker %d: %v; stderr:\n%s", p.Pid(), p.err, p.StderrTail(tail))
	}
	b, err := os.ReadFile(p.output)
	if err != nil {
		return fmt.Errorf("worker %d left no result: %v; stderr:\n%s", p.Pid(), err, p.StderrTail(tail))
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("worker %d result: %v", p.Pid(), err)
	}
	return nil
}
