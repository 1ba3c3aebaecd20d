package reliability

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/test/internal/workerproc"
)

// row is one line of the report.
type row struct {
	Store, Scenario, Trials, Expected, Observed, Notes string
	// Section is "" for the store scenarios, hostileSection for the
	// hostile-input ones (a table of their own).
	Section string

	v                *violations
	took             time.Duration
	expectViolations bool
}

var report struct {
	sync.Mutex
	rows []row
	full bool
}

func record(t *testing.T, r row) {
	t.Helper()
	report.Lock()
	report.rows = append(report.rows, r)
	report.Unlock()
	t.Logf("%s / %s: trials %s; executions expected %s, observed %s; violations %d; %s (%s)",
		r.Store, r.Scenario, r.Trials, r.Expected, r.Observed, r.v.n(), r.Notes, r.took.Round(time.Millisecond))
	if r.expectViolations {
		return
	}
	for i, s := range r.v.list {
		if i == 20 {
			t.Errorf("… and %d more violations", len(r.v.list)-20)
			break
		}
		t.Errorf("violation: %s", s)
	}
}

// TestReliability runs every scenario against every store: the short
// version by default, the full one with IDEM_RELIABILITY=full.
func TestReliability(t *testing.T) {
	runStores(t, []string{"redis", "postgres", "file"}, (*harness).needStore, func(h *harness, t *testing.T, store string, sz sizes) {
		// Streams: these three stores keep them; DynamoDB and Firestore do not.
		t.Run("streams", func(t *testing.T) { record(t, h.streams(t, store, sz)) })
		if store == "file" {
			return // one host, one clock, no network
		}
		t.Run("network", func(t *testing.T) { record(t, h.network(t, store, sz)) })
		t.Run("skew", func(t *testing.T) { record(t, h.skew(t, store, sz, false)) })
	})
}

// runStores runs, for each of stores that need finds, the scenarios that
// hold for every store, then more, the store's own.
func runStores(t *testing.T, stores []string, need func(*harness, *testing.T, string), more func(h *harness, t *testing.T, store string, sz sizes)) {
	h := newHarness(t)
	sz := levelSizes(h.full)
	report.full = h.full
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			need(h, t, store)
			if !h.full {
				// Short version: the stores' scenarios mostly wait (leases,
				// fault windows, process start-up), so overlap them.
				t.Parallel()
			}
			h.everyStoreScenario(t, store, sz)
			more(h, t, store, sz)
		})
	}
}

// everyStoreScenario runs the scenarios that hold for every store: a
// duplicate storm, SIGKILL crashes, a zombie past its lease, and recovery
// points (steps).
func (h *harness) everyStoreScenario(t *testing.T, store string, sz sizes) {
	t.Run("storm", func(t *testing.T) { record(t, h.storm(t, store, sz)) })
	t.Run("crash", func(t *testing.T) { record(t, h.crash(t, store, sz)) })
	t.Run("zombie", func(t *testing.T) { record(t, h.zombie(t, store, sz, "")) })
	t.Run("steps", func(t *testing.T) { record(t, h.recovery(t, store, sz)) })
}

// TestHarnessDetectsBrokenStore is the harness's test of itself: with
// BrokenStore (lost leases ignored, stale completions forced through) the
// zombie scenario must report violations.
func TestHarnessDetectsBrokenStore(t *testing.T) {
	h := newHarness(t)
	sz := levelSizes(false)
	cases := []struct{ store, broken string }{
		{"file", "leaselost"}, {"postgres", "flatfence"}, {"redis", "leaselost"}, {"file", "flatfence"},
	}
	if !h.full {
		cases = cases[:2] // one of each kind of breakage
	}
	for _, tc := range cases {
		store := tc.store
		t.Run(store+"/"+tc.broken, func(t *testing.T) {
			h.needStore(t, store)
			t.Parallel()
			r := h.zombie(t, store, sz, tc.broken)
			r.expectViolations = true
			detected(t, r, "the zombie scenario found no violation with a store that ignores lost leases: the harness cannot fail")
		})
	}
}

// TestHarnessDetectsClientClockLeases is the skew scenario's negative
// control: the same skewed processes, but with the Postgres store judging
// leases by each process's clock (pgstore.WithClock, a test-only option)
// instead of the database's, must show live owners taken over.
func TestHarnessDetectsClientClockLeases(t *testing.T) {
	h := newHarness(t)
	sz := levelSizes(false)
	r := h.skew(t, "postgres", sz, true)
	detected(t, r, "skewed client clocks broke nothing: the skew scenario cannot fail")
}

func TestMain(m *testing.M) {
	workerproc.Main(m, workerEnv, "IDEM_RELIABILITY_REPORT", "reliability", writeReport)
}

// writeReport writes the Markdown report: one table per store.
func writeReport(path string) error {
	report.Lock()
	defer report.Unlock()
	if len(report.rows) == 0 {
		return fmt.Errorf("no scenario ran (services down?); not writing %s", path)
	}
	level := "short"
	if report.full {
		level = "full"
	}
	cmd := os.Getenv("IDEM_RELIABILITY_CMD")
	if cmd == "" {
		cmd = "IDEM_RELIABILITY=" + level + " go test -count=1 -run 'TestReliability|TestHarness' ./test/reliability"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Reliability evidence\n\n")
	fmt.Fprintf(&b, "Generated by `make reliability` (%s version) on %s, %s, %d CPUs. Do not edit by hand: run it again.\n\n",
		level, time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.Version(), runtime.NumCPU())
	fmt.Fprintf(&b, "Command: `%s`\n\n", cmd)
	b.WriteString(`Every scenario drives the wrappers that idemgen generated for
test/reliability/work (never the store directly) from real OS processes (the
test binary re-executed as workers). Executions are counted in a Postgres
ledger that the guarded function itself writes (one row per execution: key,
fence from idem.FenceFrom, process id, database time), so no wrapper can fake
them. A violation is any breach of the scenario's promise: a second
execution under one fence, callers of a key seeing different results, an
execution after the key completed, a stale owner's completion or
fence-guarded write accepted, a key stuck past its lease or never completed,
an untyped error. See test/reliability/doc.go for the scenarios.

`)
	stores := []string{"redis", "postgres", "file", "dynamo", "firestore"}
	names := map[string]string{"redis": "Redis", "postgres": "PostgreSQL", "file": "File store",
		"dynamo": "DynamoDB (dynalite)", "firestore": "Firestore (emulator)"}
	hostile, scenarios := hostileRows(report.rows)
	for _, st := range stores {
		var rows []row
		for _, r := range scenarios {
			if r.Store == st {
				rows = append(rows, r)
			}
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&b, "## %s\n\n", names[st])
		b.WriteString("| scenario | trials | executions expected | executions observed | violations | notes | time |\n")
		b.WriteString("|---|---|---|---|---|---|---|\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s | %s |\n", r.Scenario, r.Trials, r.Expected, r.Observed,
				r.v.n(), strings.ReplaceAll(r.Notes, "|", "/"), r.took.Round(100*time.Millisecond))
		}
		b.WriteString("\n")
		for _, r := range rows {
			if r.expectViolations && r.v.n() > 0 {
				fmt.Fprintf(&b, "Violations the self-test caught on %s in %q, as intended:\n\n", names[st], r.Scenario)
				for i, s := range r.v.list {
					if i == 5 {
						fmt.Fprintf(&b, "- … %d more\n", len(r.v.list)-5)
						break
					}
					fmt.Fprintf(&b, "- %s\n", s)
				}
				b.WriteString("\n")
			}
		}
	}
	if len(hostile) > 0 {
		b.WriteString(`## Hostile inputs

Inputs and faults an adversarial user produced against earlier builds, each
of which made a function run twice, run for nobody, or strand its key
(TestHostileInputs; the same cases run against every store in the
conformance suite, runtime/idemtest). Executions are counted by the ledger.

| store | case | what is done | executions expected | executions observed (ledger) | violations | outcome | time |
|---|---|---|---|---|---|---|---|
`)
		for _, r := range hostile {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %s | %s |\n", names[r.Store], r.Scenario, r.Trials, r.Expected, r.Observed,
				r.v.n(), strings.ReplaceAll(r.Notes, "|", "/"), r.took.Round(time.Millisecond))
		}
		b.WriteString("\n")
	}
	// IDEM_RELIABILITY_APPENDIX: files appended as they are, in order
	// (a list like PATH: the broker storms' section, the fuzzing one).
	for _, extra := range filepath.SplitList(os.Getenv("IDEM_RELIABILITY_APPENDIX")) {
		if data, err := os.ReadFile(extra); err == nil {
			b.Write(data)
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
