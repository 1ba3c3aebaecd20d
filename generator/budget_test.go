package generator

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOutputBudget holds the generated code to what a reviewer reads: at
// most 70 lines per wrapped function over the golden corpus, and no
// comment line over 100 characters.
func TestOutputBudget(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "golden", "*", goldenOutput))
	if err != nil {
		t.Fatal(err)
	}
	lines, wrapped := 0, 0
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(filepath.Dir(f)), "diag_") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			lines++
			if strings.HasPrefix(line, "var idemSpec") {
				wrapped++
			}
			if c := strings.TrimLeft(line, "\t "); strings.HasPrefix(c, "//") && len(line) > 100 {
				t.Errorf("%s:%d: comment line of %d characters, want ≤ 100", f, n, len(line))
			}
		}
	}
	if wrapped == 0 {
		t.Fatal("no wrapped functions in the golden corpus")
	}
	if per := float64(lines) / float64(wrapped); per > 70 {
		t.Errorf("%d generated lines for %d wrapped functions: %.1f a function, want ≤ 70", lines, wrapped, per)
	}
}

// TestFunctionsFitAScreen: every function of the generator and the
// runtime fits on a screen (80 lines), so each piece of output can be read
// beside the code that writes it, and each step of a call beside the next.
func TestFunctionsFitAScreen(t *testing.T) {
	for _, f := range append(goSources(t, "."), goSources(t, filepath.Join("..", "runtime"))...) {
		for _, fn := range longFuncs(t, f) {
			t.Errorf("%s, want ≤ 80 lines", fn)
		}
	}
}

// TestFilesFitABudget: no Go file of the generator or the runtime (tests
// and generated files aside) is over 800 lines.
func TestFilesFitABudget(t *testing.T) {
	for _, f := range append(goSources(t, "."), goSources(t, filepath.Join("..", "runtime"))...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(data), "\n"); n > 800 {
			t.Errorf("%s is %d lines, want ≤ 800", f, n)
		}
	}
}

// goSources are the Go files below dir that people write: no tests, no
// testdata, no generated files.
func goSources(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != dir && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !generatedFile.Match(data) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// generatedFile is the line go generate's convention puts in a generated file.
var generatedFile = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// longFuncs lists the functions of file over 80 lines: "file:line: name
// is n lines".
func longFuncs(t *testing.T, file string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
		if n := end.Line - start.Line + 1; n > 80 {
			out = append(out, fmt.Sprintf("%s: %s is %d lines", start, fn.Name.Name, n))
		}
	}
	return out
}
