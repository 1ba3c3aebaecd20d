package capacity

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/test/internal/workerproc"
)

// full reports whether this is the full run (make capacity).
func full() bool { return os.Getenv("IDEM_CAPACITY") == "full" }

// proc is a running worker process: it runs its set-up, prints READY,
// waits for GO, runs its window, prints DONE and waits for EXIT.
type proc struct {
	*workerproc.Proc
	ready chan struct{}
	fin   chan struct{} // the window is over (DONE)
}

// start re-executes the test binary as a worker with cfg; it runs its
// set-up and waits for go.
func start(t *testing.T, dir string, cfg workerConfig) *proc {
	t.Helper()
	cfg.Output = workerproc.Output(dir)
	p := &proc{ready: make(chan struct{}), fin: make(chan struct{})}
	var once, onceFin sync.Once
	p.Proc = workerproc.Start(t, workerproc.Spec{Env: workerEnv, Config: cfg, Run: "TestCapacityWorker", Timeout: "20m",
		Output: cfg.Output, Stdin: true,
		Line: func(line string) bool {
			switch strings.TrimSpace(line) {
			case "READY":
				once.Do(func() { close(p.ready) })
			case "DONE":
				onceFin.Do(func() { close(p.fin) })
			default:
				return false
			}
			return true
		}})
	return p
}

func (p *proc) stderrTail() string { return p.StderrTail(3000) }

// waitReady waits for the worker's set-up to end.
func (p *proc) waitReady(timeout time.Duration) error {
	select {
	case <-p.ready:
		return nil
	case <-p.Done():
		return fmt.Errorf("worker %d exited in set-up: %v\n%s", p.Pid(), p.Err(), p.stderrTail())
	case <-time.After(timeout):
		return fmt.Errorf("worker %d not ready within %s\n%s", p.Pid(), timeout, p.stderrTail())
	}
}

func (p *proc) goAhead() { p.Send("GO") }

// finished waits for the worker's window to end (it then waits for
// release before it exits).
func (p *proc) finished(timeout time.Duration) error {
	select {
	case <-p.fin:
		return nil
	case <-p.Done():
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("worker %d did not finish within %s\n%s", p.Pid(), timeout, p.stderrTail())
	}
}

// wait lets the worker exit, waits for it and returns its result.
func (p *proc) wait(timeout time.Duration) (workerResult, error) {
	p.Send("EXIT")
	var res workerResult
	return res, p.Result(timeout, workerproc.Kill, 3000, &res)
}

// clockTick is the kernel's USER_HZ, the unit of /proc/<pid>/stat times.
const clockTick = 100

// procCPU is the user + system CPU a process has used, from
// /proc/<pid>/stat; false when the process is gone or unreadable.
func procCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) may hold spaces: fields count from after ")".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(ut+st) * time.Second / clockTick, true
}

// procTree returns pid and its descendants.
func procTree(pid int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		children[pp] = append(children[pp], p)
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// pidFile reads a pid file; 0 when there is none.
func pidFile(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// measurement is one window's outcome across its workers.
type measurement struct {
	Ops, Errors int64
	FirstErr    string
	Wall        time.Duration
	Rate        float64 // ops/s
	P50, P99    time.Duration
	ClientCPU   time.Duration // the workers' CPU over the window
	ServerCPU   time.Duration // the store server's CPU over the window (0: not measured)
	ServerKnown bool
	Removed     int
}

// perOp is CPU per operation.
func perOp(cpu time.Duration, ops int64) time.Duration {
	if ops == 0 {
		return 0
	}
	return cpu / time.Duration(ops)
}

// runWorkers starts n workers of cfg (Worker = base+i), waits until all
// are ready, measures the server's CPU (pids, read after the set-up)
// over the window and returns the merged measurement.
func runWorkers(t *testing.T, dir string, cfg workerConfig, n int, serverPIDs func() []int) (measurement, error) {
	t.Helper()
	procs := make([]*proc, n)
	base := cfg.Worker
	for i := range procs {
		c := cfg
		c.Worker = base + i
		procs[i] = start(t, dir, c)
	}
	for _, p := range procs {
		if err := p.waitReady(5 * time.Minute); err != nil {
			return measurement{}, err
		}
	}
	var pids []int
	if serverPIDs != nil {
		pids = serverPIDs()
	}
	s0 := map[int]time.Duration{}
	for _, pid := range pids {
		if c, ok := procCPU(pid); ok {
			s0[pid] = c
		}
	}
	for _, p := range procs {
		p.goAhead()
	}
	for _, p := range procs {
		if err := p.finished(cfg.Duration + 10*time.Minute); err != nil {
			return measurement{}, err
		}
	}
	// The server's CPU: the processes seen at the start (and still there)
	// and any that started during the window (a new connection's backend).
	var server time.Duration
	if serverPIDs != nil {
		for _, pid := range serverPIDs() {
			if c, ok := procCPU(pid); ok {
				server += c - s0[pid]
			}
		}
	}
	var m measurement
	var lat []int64
	var wall time.Duration
	for _, p := range procs {
		r, err := p.wait(cfg.Duration + 10*time.Minute)
		if err != nil {
			return measurement{}, err
		}
		m.Ops += r.Ops
		m.Errors += r.Errors
		if m.FirstErr == "" {
			m.FirstErr = r.FirstErr
		}
		m.ClientCPU += r.CPU
		m.Removed += r.Removed
		wall = max(wall, r.Wall)
		lat = append(lat, r.Lat...)
	}
	m.Wall = wall
	if len(pids) > 0 {
		m.ServerCPU, m.ServerKnown = server, true
	}
	if wall > 0 {
		m.Rate = float64(m.Ops) / wall.Seconds()
	}
	m.P50, m.P99 = quantile(lat, 0.50), quantile(lat, 0.99)
	return m, nil
}

func quantile(lat []int64, q float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	i := int(q * float64(len(lat)-1))
	return time.Duration(lat[i])
}

// loadAvg is the 1-minute load average, for the report.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

func missing(t *testing.T, what string, err error, howto string) {
	t.Helper()
	testenv.Need(t, what, "start it with: "+howto, err)
}
