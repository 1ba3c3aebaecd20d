package generator

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files from the generator's output")

// Golden layout: testdata/<case>/ is an input package; golden/<case>/ holds
// either idem_gen.go (the expected output) or diagnostics.txt (the expected
// errors, one file:line:col: message per line, positions relative to the
// case's folder).
const (
	goldenOutput = "idem_gen.go"
	goldenDiags  = "diagnostics.txt"
)

// caseResult is what the generator made of one case.
type caseResult struct {
	output []byte
	diags  []string
}

// runCases generates every case in one load (one go list for all of them).
func runCases(t *testing.T) (map[string]*caseResult, []string) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return runCasesIn(t, root, nil)
}

// runCasesIn generates every case of root/testdata, running the go
// command with env.
func runCasesIn(t *testing.T, root string, env []string) (map[string]*caseResult, []string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	var names, patterns []string
	results := map[string]*caseResult{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		names = append(names, e.Name())
		patterns = append(patterns, "./testdata/"+e.Name())
		results[e.Name()] = &caseResult{}
	}
	files, err := Generate(Config{Dir: root, Patterns: patterns, Env: env})
	var gerr *Error
	if err != nil && !errors.As(err, &gerr) {
		t.Fatalf("Generate: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(filepath.Dir(f.Path))
		if r := results[name]; r != nil {
			r.output = f.Content
		}
	}
	if gerr != nil {
		for _, d := range gerr.Diagnostics {
			rel := strings.TrimPrefix(d.Pos.Filename, "testdata/")
			name, file, ok := strings.Cut(rel, "/")
			r := results[name]
			if !ok || r == nil {
				t.Errorf("diagnostic outside the cases: %s", d)
				continue
			}
			d.Pos.Filename = file
			r.diags = append(r.diags, d.String())
		}
	}
	sort.Strings(names)
	return results, names
}

// caseKind says what a case expects: generated output or diagnostics.
type caseKind int

const (
	kindOutput caseKind = iota + 1
	kindDiags
)

func (k caseKind) String() string {
	if k == kindDiags {
		return "a diagnostics case (" + goldenDiags + ")"
	}
	return "an output case (" + goldenOutput + ")"
}

// diagPrefix starts the name of every diagnostics case.
const diagPrefix = "diag_"

// declaredKind is what a case declares it expects: the kind of the golden
// file it has, which must agree with its name (diag_ for diagnostics). A
// case with no golden yet declares it by its name alone.
func declaredKind(name, dir string) (caseKind, error) {
	byName := kindOutput
	if strings.HasPrefix(name, diagPrefix) {
		byName = kindDiags
	}
	_, errOut := os.Stat(filepath.Join(dir, goldenOutput))
	_, errDiag := os.Stat(filepath.Join(dir, goldenDiags))
	var byGolden caseKind
	switch {
	case errOut == nil && errDiag == nil:
		return 0, fmt.Errorf("golden/%s holds both %s and %s: a case expects one or the other", name, goldenOutput, goldenDiags)
	case errOut == nil:
		byGolden = kindOutput
	case errDiag == nil:
		byGolden = kindDiags
	default:
		return byName, nil // new: -update creates the golden its name asks for
	}
	if byGolden != byName {
		return 0, fmt.Errorf("golden/%s makes it %s but its name makes it %s (diagnostics cases are named %s*): rename the case, or delete its golden by hand if it is to change kind", name, byGolden, byName, diagPrefix)
	}
	return byGolden, nil
}

// behaviourTests lists the behaviour tests of a case (testdata/<case>/*_test.go),
// which TestBehaviour runs against its generated output.
func behaviourTests(name string) []string {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", name, "*_test.go"))
	for i, f := range files {
		files[i] = filepath.Base(f)
	}
	return files
}

// TestGolden compares every case's output or diagnostics with its golden.
// A case cannot change its kind: -update refuses to turn an output case
// into a diagnostics case or back (a generator bug would otherwise rewrite
// the expectation it breaks, as golden/pointerpath once was: an output
// case whose golden became the diagnostic of the bug it was to test).
func TestGolden(t *testing.T) {
	results, names := runCases(t)
	outputs, diagCases := 0, 0
	for _, name := range names {
		r := results[name]
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("..", "golden", name)
			want, err := declaredKind(name, dir)
			if err != nil {
				t.Fatal(err)
			}
			got := kindOutput
			if len(r.diags) > 0 {
				got = kindDiags
			}
			if tests := behaviourTests(name); len(tests) > 0 && (got == kindDiags || want == kindDiags) {
				t.Errorf("testdata/%s has behaviour tests (%s) but is a diagnostics case: they would never run", name, strings.Join(tests, ", "))
			}
			if got != want {
				what := "its diagnostics"
				if got == kindOutput {
					what = "no diagnostic"
				}
				t.Fatalf("%s is %s but the generator gave %s; -update does not change a case's kind (fix the generator or the input):\n%s", name, want, what, strings.Join(r.diags, "\n"))
			}
			var file string
			var out []byte
			if got == kindDiags {
				file = goldenDiags
				out = []byte(strings.Join(r.diags, "\n") + "\n")
				diagCases++
			} else {
				file = goldenOutput
				out = r.output
				outputs++
				if out == nil {
					t.Fatalf("no output and no diagnostics: the case has no annotated function")
				}
			}
			if *update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, file), out, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			golden, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatalf("%v (run go test ./generator -update)", err)
			}
			if diff := cmp.Diff(string(golden), string(out)); diff != "" {
				t.Errorf("golden/%s/%s differs (-want +got; go test ./generator -update rewrites it):\n%s", name, file, diff)
			}
			if got == kindOutput && !bytes.HasPrefix(out, []byte(Header+"\n")) {
				t.Errorf("output does not start with the header")
			}
		})
	}
	// A golden without its case would never be compared again.
	dirs, _ := os.ReadDir(filepath.Join("..", "golden"))
	for _, d := range dirs {
		if _, ok := results[d.Name()]; d.IsDir() && !ok {
			t.Errorf("golden/%s has no case testdata/%s", d.Name(), d.Name())
		}
	}
	t.Logf("%d output cases, %d diagnostic cases", outputs, diagCases)
	if !*update && (outputs < 20 || diagCases < 30) {
		t.Errorf("want at least 20 output and 30 diagnostic cases, have %d and %d", outputs, diagCases)
	}
}

// Generating twice gives the same bytes: no map order or pointer leaks.
func TestDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: loads every case twice")
	}
	a, names := runCases(t)
	b, _ := runCases(t)
	for _, n := range names {
		if !bytes.Equal(a[n].output, b[n].output) || !cmp.Equal(a[n].diags, b[n].diags) {
			t.Errorf("%s: two runs differ", n)
		}
	}
}

// A generated decoder looks a struct field up once, in the block that
// began the struct: a lookup inside a loop or a condition would run again
// for each element, after the field's value was read, and read the field
// anew instead of the next value. fieldDec puts the lookup in place of the
// only use of d in a one-statement value; this checks, over the golden
// corpus, that no such statement repeats it (Present is the one lookup a
// condition asks, once).
func TestFieldLookupsAtStructLevel(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "golden", "*", "idem_gen.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	begin := regexp.MustCompile(`^(\t*)(s\d*) := d\.Struct\(\)`)
	lookup := regexp.MustCompile(`d\.Field\((s\d*), "[^"]*"\)(\.Present\(\))?`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		level := map[string]int{}
		for i, line := range strings.Split(string(b), "\n") {
			if m := begin.FindStringSubmatch(line); m != nil {
				level[m[2]] = len(m[1])
			}
			indent := len(line) - len(strings.TrimLeft(line, "\t"))
			for _, m := range lookup.FindAllStringSubmatch(line, -1) {
				want, ok := level[m[1]]
				stmt := strings.TrimSpace(line)
				nested := strings.HasPrefix(stmt, "for ") || strings.HasPrefix(stmt, "} else") ||
					strings.HasPrefix(stmt, "if ") && m[2] == ""
				if !ok || indent != want || nested {
					t.Errorf("%s:%d: %s: a field lookup outside its struct's block", f, i+1, stmt)
				}
			}
		}
	}
}
