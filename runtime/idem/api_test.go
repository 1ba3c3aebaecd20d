package idem_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportedAPI holds the package to what a user keeps in their head:
// at most 60 exported functions, types and methods, counted as
// `go doc -all` lists them (generated-code support lives in idemimpl).
func TestExportedAPI(t *testing.T) {
	fset := token.NewFileSet()
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
	var names []string
	for _, f := range p.Funcs {
		names = append(names, f.Name)
	}
	for _, ty := range p.Types {
		names = append(names, ty.Name)
		for _, f := range ty.Funcs {
			names = append(names, f.Name)
		}
		for _, m := range ty.Methods {
			names = append(names, ty.Name+"."+m.Name)
		}
	}
	if len(names) > 60 {
		t.Errorf("runtime/idem exports %d functions, types and methods, want ≤ 60: %s", len(names), strings.Join(names, " "))
	}
	t.Logf("%d exported identifiers", len(names))
}
