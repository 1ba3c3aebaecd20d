package generator

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/go/packages"
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

// TestFilesReadDownward holds the generator's files to a layering: no
// file refers, directly or through other files, back to itself. So there
// is an order (generator.go, the render files and the verify files they
// call, the analyze files, then plan.go and the ground: pkginfo.go,
// shape.go, wellknown.go, stdlib.go, diag.go) in which every file uses
// only the files after it, and a reader can go down it. A reference is
// what the type checker resolves: a package-level name or a method, not
// a field or a local of the same spelling. The failure names each loop
// with the names that tie it.
//
// It also holds the phases apart: no analyze file refers to a render or
// verify file, and plan.go refers to none of the three.
func TestFilesReadDownward(t *testing.T) {
	edges := fileReferences(t)
	for _, loop := range fileLoops(edges) {
		in := map[string]bool{}
		for _, f := range loop {
			in[f] = true
		}
		var ties []string
		for _, f := range loop {
			for _, to := range sortedKeys(edges[f]) {
				if in[to] {
					ties = append(ties, fmt.Sprintf("%s -> %s (%s)", f, to, strings.Join(edges[f][to], ", ")))
				}
			}
		}
		t.Errorf("files refer to each other in a loop: %s", strings.Join(ties, "; "))
	}
	phase := func(f string) string {
		switch {
		case f == "plan.go":
			return "plan"
		case strings.HasPrefix(f, "analyze"):
			return "analyze"
		case strings.HasPrefix(f, "render"), f == "emitter.go":
			return "render"
		case strings.HasPrefix(f, "verify"):
			return "verify"
		}
		return ""
	}
	banned := map[string][]string{"analyze": {"render", "verify"}, "plan": {"analyze", "render", "verify"}}
	for _, from := range sortedKeys(edges) {
		for _, to := range sortedKeys(edges[from]) {
			for _, b := range banned[phase(from)] {
				if phase(to) == b {
					t.Errorf("%s (%s) refers to %s (%s): %s", from, phase(from), to, b, strings.Join(edges[from][to], ", "))
				}
			}
		}
	}
}

// fileReferences maps each non-test file of the package to the files it
// refers to, with the names it uses of each.
func fileReferences(t *testing.T) map[string]map[string][]string {
	t.Helper()
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo}
	pkgs, err := packages.Load(cfg, ".")
	if err != nil || len(pkgs) != 1 || len(pkgs[0].Errors) > 0 {
		t.Fatalf("load the generator package: %v %v", err, pkgs)
	}
	p := pkgs[0]
	file := func(o types.Object) string { return filepath.Base(p.Fset.Position(o.Pos()).Filename) }
	ours := func(o types.Object) bool {
		if o.Pkg() != p.Types {
			return false
		}
		if o.Parent() == p.Types.Scope() {
			return true
		}
		f, ok := o.(*types.Func)
		return ok && f.Type().(*types.Signature).Recv() != nil
	}
	edges := map[string]map[string][]string{}
	for _, f := range p.Syntax {
		from := filepath.Base(p.Fset.Position(f.Pos()).Filename)
		seen := map[string]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			o := p.TypesInfo.Uses[id]
			if o == nil || !ours(o) || file(o) == from || seen[o.Name()+file(o)] {
				return true
			}
			seen[o.Name()+file(o)] = true
			if edges[from] == nil {
				edges[from] = map[string][]string{}
			}
			edges[from][file(o)] = append(edges[from][file(o)], o.Name())
			return true
		})
	}
	return edges
}

// fileLoops returns the strongly connected sets of more than one file
// (Tarjan's algorithm), each sorted by name.
func fileLoops(edges map[string]map[string][]string) [][]string {
	var (
		index   = map[string]int{}
		low     = map[string]int{}
		onStack = map[string]bool{}
		stack   []string
		loops   [][]string
	)
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range sortedKeys(edges[v]) {
			if _, ok := index[w]; !ok {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var loop []string
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			loop = append(loop, w)
			if w == v {
				break
			}
		}
		if len(loop) > 1 {
			sort.Strings(loop)
			loops = append(loops, loop)
		}
	}
	for _, v := range sortedKeys(edges) {
		if _, ok := index[v]; !ok {
			visit(v)
		}
	}
	return loops
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestFileLoops checks the loop finder the layout test relies on.
func TestFileLoops(t *testing.T) {
	e := func(pairs ...string) map[string]map[string][]string {
		m := map[string]map[string][]string{}
		for i := 0; i < len(pairs); i += 2 {
			if m[pairs[i]] == nil {
				m[pairs[i]] = map[string][]string{}
			}
			m[pairs[i]][pairs[i+1]] = []string{"x"}
		}
		return m
	}
	tests := []struct {
		name  string
		edges map[string]map[string][]string
		want  [][]string
	}{
		{"chain", e("a", "b", "b", "c"), nil},
		{"pair", e("a", "b", "b", "a"), [][]string{{"a", "b"}}},
		{"through a third", e("a", "b", "b", "c", "c", "a", "c", "d"), [][]string{{"a", "b", "c"}}},
		{"two loops", e("a", "b", "b", "a", "c", "d", "d", "c", "b", "c"), [][]string{{"c", "d"}, {"a", "b"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, fileLoops(tc.edges)); diff != "" {
				t.Errorf("fileLoops (-want +got):\n%s", diff)
			}
		})
	}
}
