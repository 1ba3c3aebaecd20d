package generator

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/go/packages"
)

// TestCheckedMatchesLoader runs the engine's second front end on every
// case as go vet sees it (the test variant of the package: its test files
// and its generated file type-checked with it) and requires exactly what
// the loader front end gives: the same bytes, or the same diagnostics at
// the same positions. The vet analyzer's stale check rests on this.
func TestCheckedMatchesLoader(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: loads every case twice")
	}
	results, names := runCases(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	overlay := map[string][]byte{}
	var patterns []string
	for _, name := range names {
		patterns = append(patterns, "./testdata/"+name)
		if out := results[name].output; out != nil {
			overlay[filepath.Join(root, "testdata", name, DefaultOutput)] = out
		}
		// A test file that declares, at package level, every parameter
		// name of the case: the generator's loader never sees test files,
		// so the wrappers' parameters must not be renamed around them here
		// either. The behaviour tests are blanked (they need a harness
		// from outside this module to compile).
		pkgName, params := paramNames(t, filepath.Join(root, "testdata", name))
		src := "package " + pkgName + "\n\nvar x, c int\n"
		for _, n := range params {
			src += "var " + n + " int\n"
		}
		overlay[filepath.Join(root, "testdata", name, "zz_vetvariant_test.go")] = []byte(src)
		for _, f := range behaviourTests(name) {
			overlay[filepath.Join(root, "testdata", name, f)] = []byte("package " + pkgName + "\n")
		}
	}
	// NeedDeps: every package type-checked from source, so no alias comes
	// from export data, where go/types races when several checkers meet it
	// at once (golang/go#79035).
	pkgs, err := packages.Load(&packages.Config{
		Mode:    packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedImports | packages.NeedDeps,
		Dir:     root,
		Tests:   true,
		Overlay: overlay,
	}, patterns...)
	if err != nil {
		t.Fatal(err)
	}
	compared, variants := 0, 0
	for _, p := range pkgs {
		if len(p.Syntax) == 0 || strings.HasSuffix(p.Name, "_test") || strings.HasSuffix(p.ID, ".test") {
			continue // external tests and test mains: the generator never looks at them
		}
		name := filepath.Base(filepath.Dir(p.GoFiles[0]))
		r := results[name]
		if r == nil {
			continue
		}
		if len(p.Errors) > 0 {
			t.Logf("skipped %s: %v", p.ID, p.Errors[0])
			continue // diag_type_error and the like: vet never analyses a package that does not compile
		}
		t.Run(p.ID, func(t *testing.T) {
			got, diags := GenerateChecked(Checked{Fset: p.Fset, Files: p.Syntax, Types: p.Types, Info: p.TypesInfo, Output: filepath.Join(filepath.Dir(p.GoFiles[0]), DefaultOutput)})
			var gotDiags []string
			for _, d := range diags {
				d.Pos.Filename = filepath.Base(d.Pos.Filename)
				gotDiags = append(gotDiags, d.String())
			}
			if diff := cmp.Diff(r.diags, gotDiags); diff != "" {
				t.Errorf("diagnostics differ (-loader +checked):\n%s", diff)
			}
			if diff := cmp.Diff(string(r.output), string(got)); diff != "" {
				t.Errorf("output differs (-loader +checked):\n%s", diff)
			}
		})
		compared++
		if strings.Contains(p.ID, "[") {
			variants++
		}
	}
	t.Logf("compared %d packages, %d of them test variants", compared, variants)
	if compared < 150 || variants < 70 {
		t.Errorf("compared %d packages (%d test variants), want at least 150 (70)", compared, variants)
	}
}

// paramNames returns the package name of the case in dir and the names
// of the parameters and receivers of its functions that no package-level
// declaration of the case already uses.
func paramNames(t *testing.T, dir string) (string, []string) {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	declared, seen := map[string]bool{"x": true, "c": true}, map[string]bool{}
	var pkgName string
	var params []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		pkgName = f.Name.Name
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						declared[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, id := range s.Names {
							declared[id.Name] = true
						}
					case *ast.ImportSpec:
						if s.Name != nil {
							declared[s.Name.Name] = true
						} else {
							p, _ := strconv.Unquote(s.Path.Value)
							declared[path.Base(p)] = true
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv == nil {
					declared[d.Name.Name] = true
				}
				lists := []*ast.FieldList{d.Type.Params}
				if d.Recv != nil {
					lists = append(lists, d.Recv)
				}
				for _, l := range lists {
					for _, fld := range l.List {
						for _, id := range fld.Names {
							seen[id.Name] = true
						}
					}
				}
			}
		}
	}
	for n := range seen {
		if !declared[n] && n != "_" && types.Universe.Lookup(n) == nil {
			params = append(params, n)
		}
	}
	sort.Strings(params)
	return pkgName, params
}

// The //idem:direct escape belongs to the vet analyzer: the generator
// neither rejects it (as an unknown option, or as a stray directive) nor
// takes it for an annotation, wherever it stands.
func TestDirectEscapeIsNoDirective(t *testing.T) {
	const src = `package p

import "context"

//idem:ttl=1h
func Charge(ctx context.Context, id string) error { return nil }

// Retry skips the wrapper on purpose.
//
//idem:direct the caller holds the lock
func Retry(ctx context.Context) error {
	return Charge(ctx, "x") //idem:direct retried under the same key
}

//idem:direct
func Bare() {}

func Inside(ctx context.Context) {
	//idem:direct tests only
	_ = Charge(ctx, "y")
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "/src/p/p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}, Types: map[ast.Expr]types.TypeAndValue{}}
	pkg, err := (&types.Config{Importer: importer.Default()}).Check("example.com/p", fset, []*ast.File{f}, info)
	if err != nil {
		t.Fatal(err)
	}
	out, diags := GenerateChecked(Checked{Fset: fset, Files: []*ast.File{f}, Types: pkg, Info: info, Output: "/src/p/idem_gen.go"})
	if len(diags) > 0 {
		t.Fatalf("diagnostics for //idem:direct: %v", diags)
	}
	if out == nil || !strings.Contains(string(out), "func (x *Idempotent) Charge(") {
		t.Fatalf("want a wrapper for Charge:\n%s", out)
	}
	for _, fn := range []string{"Retry", "Bare", "Inside"} {
		if strings.Contains(string(out), ") "+fn+"(") {
			t.Errorf("%s was wrapped: //idem:direct taken for an annotation", fn)
		}
	}
}

func TestParseDirectEscape(t *testing.T) {
	for _, tc := range []struct {
		text, reason  string
		ok, directive bool
	}{
		{"//idem:direct the lock is held", "the lock is held", true, false},
		{"//idem:direct\tmigration  ", "migration", true, false},
		{"//idem:direct", "", true, false},
		{"//idem:direct   ", "", true, false},
		{"//idem:directly=1", "", false, true}, // not the escape: an (unknown) option
		{"//idem:ttl=1h", "", false, true},
		{"// idem:direct x", "", false, false},
	} {
		reason, ok := ParseDirectEscape(tc.text)
		if reason != tc.reason || ok != tc.ok {
			t.Errorf("ParseDirectEscape(%q) = %q, %v; want %q, %v", tc.text, reason, ok, tc.reason, tc.ok)
		}
		if got := IsDirective(tc.text); got != tc.directive {
			t.Errorf("IsDirective(%q) = %v, want %v", tc.text, got, tc.directive)
		}
	}
}
