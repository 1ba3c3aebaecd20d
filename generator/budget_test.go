package generator

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
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

// TestEmitterFunctionsFitAScreen: every function of the generator fits on
// a screen (80 lines), so each piece of output can be read beside the code
// that writes it.
func TestEmitterFunctionsFitAScreen(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
			if n := end.Line - start.Line + 1; n > 80 {
				t.Errorf("%s: %s is %d lines, want ≤ 80", start, fn.Name.Name, n)
			}
		}
	}
}
