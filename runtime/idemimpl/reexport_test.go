package idemimpl_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every export of runtime/internal/impl is re-exported here under its
// own name (BeginCall, idem's hook, aside), so generated code finds all
// of it in one package.
func TestReexportsImpl(t *testing.T) {
	impl, here := exports(t, "../internal/impl"), exports(t, ".")
	var missing []string
	for _, name := range impl {
		if name != "BeginCall" && !slices.Contains(here, name) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("runtime/internal/impl exports that idemimpl does not re-export: %s", strings.Join(missing, " "))
	}
}

// exports lists the exported top-level names of the non-test files in dir.
func exports(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for name, obj := range f.Scope.Objects {
			if ast.IsExported(name) && obj.Kind != ast.Bad {
				names = append(names, name)
			}
		}
	}
	return names
}
