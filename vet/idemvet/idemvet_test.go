package idemvet_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/idemgen/idemgen/generator"
	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/vet/idemvet"
)

// scratch copies testdata/mod into a temporary module (example.com/vt,
// with this checkout as github.com/idemgen/idemgen) and generates the
// idem_gen.go files there with the generator as it is now, so the "fresh"
// packages stay fresh whatever the generator's output becomes. A file
// x.go.before stands in for x.go while generating: the package's
// generated file then matches old annotations (stale/, gone/).
func scratch(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir("testdata/mod", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata/mod", path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.ScratchModule(dir, "example.com/vt"); err != nil {
		t.Fatal(err)
	}
	// analysistest loads with os.Environ() plus GOPROXY=off and GOWORK=off.
	t.Setenv("GOFLAGS", "-mod=mod")

	befores, _ := filepath.Glob(filepath.Join(dir, "*", "*.go.before"))
	current := map[string][]byte{}
	for _, b := range befores {
		src := strings.TrimSuffix(b, ".before")
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		current[src] = data
		old, err := os.ReadFile(b)
		if err != nil {
			t.Fatal(err)
		}
		write(t, src, old)
		if err := os.Remove(b); err != nil {
			t.Fatal(err)
		}
	}
	files, err := generator.Generate(generator.Config{Dir: dir, Patterns: []string{"./pay", "./stale", "./gone", "./ship", "./gen", "./wrapsdk"}, Env: append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")})
	if err != nil {
		t.Fatalf("generating the scratch module: %v", err)
	}
	if len(files) != 6 {
		t.Fatalf("generated %d files, want 6", len(files))
	}
	for _, f := range files {
		write(t, f.Path, f.Content)
	}
	for src, data := range current {
		write(t, src, data)
	}
	return dir
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestAnalyzer checks every diagnostic of the analyzer against the want
// comments of the scratch module: bypasses within a package and across
// packages (facts), in test files too; stale, missing and no-longer-needed
// generated files; wrappers given a fresh context; directive problems.
// The fresh packages (pay) having no stale diagnostic is checked too: an
// unexpected diagnostic fails the test.
func TestAnalyzer(t *testing.T) {
	dir := scratch(t)
	analysistest.Run(t, dir, idemvet.Analyzer, "./...")
}

// With -testfiles=false a direct call in a _test.go file is not reported.
func TestSkipTestFiles(t *testing.T) {
	dir := scratch(t)
	for _, f := range []string{"pay/pay_test.go", "app/app_test.go"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		// No diagnostic is wanted there any more.
		i := strings.Index(string(data), "// want")
		j := strings.IndexByte(string(data[i:]), '\n')
		write(t, filepath.Join(dir, f), append(append([]byte{}, data[:i]...), data[i+j:]...))
	}
	if err := idemvet.Analyzer.Flags.Set("testfiles", "false"); err != nil {
		t.Fatal(err)
	}
	defer idemvet.Analyzer.Flags.Set("testfiles", "true")
	analysistest.Run(t, dir, idemvet.Analyzer, "./pay", "./app")
}

// The suggested fixes: a direct call becomes the wrapper's call when a
// *Idempotent is in scope; a fresh context becomes the one in scope.
func TestSuggestedFixes(t *testing.T) {
	dir := scratch(t)
	golden, err := os.ReadFile("testdata/app.go.golden")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "app", "app.go.golden"), golden)
	analysistest.RunWithSuggestedFixes(t, dir, idemvet.Analyzer, "./app")
}

// A call of an annotated interface method through the interface, where
// a decorator is in scope, is fixed to call the decorator.
func TestInterfaceSuggestedFixes(t *testing.T) {
	dir := scratch(t)
	golden, err := os.ReadFile("testdata/shipapp.go.golden")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "shipapp", "shipapp.go.golden"), golden)
	analysistest.RunWithSuggestedFixes(t, dir, idemvet.Analyzer, "./shipapp")
}

// Directive problems are the generator's own diagnostics at the
// generator's own positions, to the column: the analyzer's, from the
// pass, against the generator's loader run on the same package.
func TestDirectiveDiagnosticsAtGeneratorPositions(t *testing.T) {
	dir := scratch(t)
	var got []string
	for _, r := range analysistest.Run(t, dir, idemvet.Analyzer, "./directives") {
		for _, d := range r.Action.Diagnostics {
			pos := r.Action.Package.Fset.Position(d.Pos)
			rel, err := filepath.Rel(dir, pos.Filename)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%s:%d:%d: %s", filepath.ToSlash(rel), pos.Line, pos.Column, d.Message))
		}
	}
	_, err := generator.Generate(generator.Config{Dir: dir, Patterns: []string{"./directives"}, Env: testenv.OfflineGoEnv()})
	var gerr *generator.Error
	if !errors.As(err, &gerr) {
		t.Fatalf("Generate: %v, want diagnostics", err)
	}
	var want []string
	for _, d := range gerr.Diagnostics {
		want = append(want, d.String())
	}
	sort.Strings(got)
	sort.Strings(want)
	if len(want) < 4 {
		t.Fatalf("the generator reports %d problems in testdata/mod/directives, want at least 4: %v", len(want), want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("analyzer diagnostics (-generator +analyzer):\n%s", diff)
	}
}
