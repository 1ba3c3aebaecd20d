package generator

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
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
	files, err := Generate(Config{Dir: root, Patterns: patterns})
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

func TestGolden(t *testing.T) {
	results, names := runCases(t)
	outputs, diagCases := 0, 0
	for _, name := range names {
		r := results[name]
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("..", "golden", name)
			var want, got []byte
			var file, other string
			if len(r.diags) > 0 {
				file, other = goldenDiags, goldenOutput
				got = []byte(strings.Join(r.diags, "\n") + "\n")
				diagCases++
			} else {
				file, other = goldenOutput, goldenDiags
				got = r.output
				outputs++
				if got == nil {
					t.Fatalf("no output and no diagnostics: the case has no annotated function")
				}
			}
			if *update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				os.Remove(filepath.Join(dir, other))
				if err := os.WriteFile(filepath.Join(dir, file), got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if _, err := os.Stat(filepath.Join(dir, other)); err == nil {
				t.Errorf("golden/%s/%s exists but the case produced %s", name, other, file)
			}
			want, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatalf("%v (run go test ./generator -update)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("golden/%s/%s differs (-want +got; go test ./generator -update rewrites it):\n%s", name, file, diff)
			}
			if len(r.diags) == 0 && !bytes.HasPrefix(got, []byte(Header+"\n")) {
				t.Errorf("output does not start with the header")
			}
		})
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
