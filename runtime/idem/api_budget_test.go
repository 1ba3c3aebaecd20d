package idem_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// apiBudget is the most exported identifiers runtime/idem may have:
// functions, types, methods (of concrete types and of interfaces),
// constants and variables, counted together. It only goes down. The
// store implementer's contract lives in runtime/idemstore, as
// database/sql/driver is database/sql's.
const apiBudget = 90

// TestAPIBudget holds runtime/idem to what a user keeps in their head and
// to an honest boundary: what a person touches (hand-written calls,
// Keyer, a Guard over a store, adapters) is here, the store contract is
// runtime/idemstore, and no exported
// declaration names runtime/idemimpl, the generated code's package, or
// runtime/internal/impl behind it.
func TestAPIBudget(t *testing.T) {
	fset := token.NewFileSet()
	p := parsePackage(t, fset)
	var names, leaks []string
	add := func(name string, node ast.Node) {
		names = append(names, name)
		if n := namesImpl(node); n != "" {
			leaks = append(leaks, name+" ("+n+")")
		}
	}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, s := range v.Decl.Specs {
				vs := s.(*ast.ValueSpec)
				for _, n := range vs.Names {
					if n.IsExported() {
						add(n.Name, vs.Type) // its type; the value is the implementation's
					}
				}
			}
		}
	}
	values(p.Consts)
	values(p.Vars)
	for _, f := range p.Funcs {
		add(f.Name, f.Decl.Type)
	}
	for _, ty := range p.Types {
		spec := ty.Decl.Specs[0].(*ast.TypeSpec)
		add(ty.Name, exportedOnly(spec))
		values(ty.Consts)
		values(ty.Vars)
		for _, f := range ty.Funcs {
			add(f.Name, f.Decl.Type)
		}
		for _, m := range ty.Methods {
			add(ty.Name+"."+m.Name, m.Decl.Type)
		}
		if it, ok := spec.Type.(*ast.InterfaceType); ok {
			for _, m := range it.Methods.List {
				for _, n := range m.Names {
					if n.IsExported() {
						add(ty.Name+"."+n.Name, m.Type)
					}
				}
			}
		}
	}
	if len(names) > apiBudget {
		t.Errorf("runtime/idem exports %d identifiers (functions, types, methods, interface methods, consts, vars), want ≤ %d:\n%s",
			len(names), apiBudget, strings.Join(names, "\n"))
	}
	if len(leaks) > 0 {
		t.Errorf("exported declarations of runtime/idem name the generated code's package:\n%s", strings.Join(leaks, "\n"))
	}
	t.Logf("%d exported identifiers", len(names))
}

// parsePackage reads runtime/idem's non-test files with go/doc.
func parsePackage(t *testing.T, fset *token.FileSet) *doc.Package {
	t.Helper()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/idemgen/idemgen/runtime/idem")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// exportedOnly is a type's declaration without its unexported struct
// fields, which its signature does not show.
func exportedOnly(spec *ast.TypeSpec) ast.Node {
	st, ok := spec.Type.(*ast.StructType)
	if !ok {
		return spec
	}
	var fields []*ast.Field
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			if n.IsExported() {
				fields = append(fields, f)
				break
			}
		}
	}
	return &ast.StructType{Fields: &ast.FieldList{List: fields}}
}

// namesImpl returns the first qualified identifier in node whose package
// is idemimpl or impl (runtime/internal/impl), or "".
func namesImpl(node ast.Node) string {
	var found string
	if node == nil || reflect.ValueOf(node).IsNil() {
		return ""
	}
	ast.Inspect(node, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && found == "" {
			if x, ok := sel.X.(*ast.Ident); ok && (x.Name == "idemimpl" || x.Name == "impl") {
				found = x.Name + "." + sel.Sel.Name
			}
		}
		return found == ""
	})
	return found
}
