package generator

import (
	"fmt"
	"go/ast"
	"go/types"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/go/packages"
)

// TestFilesReadDownward holds the generator's files to a layering: no
// file refers, directly or through other files, back to itself. So there
// is an order (generator.go, the verify, render and analyze files, then
// plan.go and the ground: pkginfo.go, shape.go, wellknown.go, stdlib.go,
// diag.go) in which every file uses only the files after it, and a
// reader can go down it. A reference is what the type checker resolves:
// a package-level name or a method, not a field or a local of the same
// spelling. The failure names each loop with the names that tie it.
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
	for from, tos := range edges {
		for to, names := range tos {
			for _, b := range banned[phase(from)] {
				if phase(to) == b {
					t.Errorf("%s (%s) refers to %s (%s): %s", from, phase(from), to, b, strings.Join(names, ", "))
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
