package generator

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNamesUniqueAcrossPackages: two packages of one run that give their
// functions one name= are refused, each function's diagnostic naming the
// other, and neither package gets a generated file (their calls would
// share a key space). A third package is generated as usual.
func TestNamesUniqueAcrossPackages(t *testing.T) {
	mod := newScratch(t, "example.test/dup")
	files := map[string]string{
		"a/a.go": `package a

import "context"

// Charge charges.
//
//idem:name=billing.charge
func Charge(ctx context.Context, id string) (string, error) { return id, nil }
`,
		"b/b.go": `package b

import "context"

// Refund refunds, under a name copied from a.Charge.
//
//idem:ttl=1h name=billing.charge
func Refund(ctx context.Context, id string) (string, error) { return id, nil }
`,
		"c/c.go": `package c

import "context"

// Ship ships.
//
//idem:name=billing.ship
func Ship(ctx context.Context, id string) error { return nil }
`,
	}
	for name, src := range files {
		path := filepath.Join(mod, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, path, []byte(src))
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	out, err := Generate(Config{Dir: mod, Patterns: []string{"./..."}, Env: env})
	got := diagnosticsOf(t, err)
	const tail = ": two functions with one name share a key space and would answer each other's calls; give each its own name="
	want := []string{
		`a/a.go:7:8: name "billing.charge" of a.Charge is also the name of b.Refund (at b/b.go:7:15)` + tail,
		`b/b.go:7:15: name "billing.charge" of b.Refund is also the name of a.Charge (at a/a.go:7:8)` + tail,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
	var generated []string
	for _, f := range out {
		generated = append(generated, f.PkgPath)
	}
	if diff := cmp.Diff([]string{"example.test/dup/c"}, generated); diff != "" {
		t.Errorf("generated packages (-want +got):\n%s", diff)
	}
}

// TestSignature: a Spec's Signature changes with what makes another
// function (its name=, version=, the kinds of its parameters and
// results) and stays with what a compatible change alters: the Go
// function's name, type names, struct fields (records decode across
// added and removed fields).
func TestSignature(t *testing.T) {
	const base = `package p

import "context"

type Req struct{ ID string }
type Receipt struct{ ID string; Amount int64 }

func Charge(ctx context.Context, req Req) (*Receipt, error) { panic(0) }
`
	cases := []struct {
		name    string
		src     string
		fn      string
		specN   string // name=
		version int
		same    bool
	}{
		{"Itself", base, "Charge", "charge", 0, true},
		{"GoFunctionRenamed", strings.Replace(base, "func Charge", "func Pay", 1), "Pay", "charge", 0, true},
		{"ResultFieldAdded", strings.Replace(base, "Amount int64 }", "Amount int64; Note string }", 1), "Charge", "charge", 0, true},
		{"ResultTypeRenamed", strings.ReplaceAll(base, "Receipt", "Invoice"), "Charge", "charge", 0, true},
		{"IntWidened", strings.Replace(base, "Amount int64", "Amount int32", 1), "Charge", "charge", 0, true},
		{"OtherName", base, "Charge", "refund", 0, false},
		{"OtherVersion", base, "Charge", "charge", 1, false},
		{"ParamKindChanged", strings.Replace(base, "req Req)", "req string)", 1), "Charge", "charge", 0, false},
		{"ParamAdded", strings.Replace(base, "req Req)", "req Req, n int)", 1), "Charge", "charge", 0, false},
		{"ResultByValue", strings.Replace(base, "(*Receipt, error)", "(Receipt, error)", 1), "Charge", "charge", 0, false},
		{"ResultSlice", strings.Replace(base, "(*Receipt, error)", "([]*Receipt, error)", 1), "Charge", "charge", 0, false},
		{"ResultMap", strings.Replace(base, "(*Receipt, error)", "(map[string]int, error)", 1), "Charge", "charge", 0, false},
	}
	want := signature("charge", 0, funcSig(t, base, "Charge"))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := signature(tc.specN, tc.version, funcSig(t, tc.src, tc.fn))
			if (got == want) != tc.same {
				t.Errorf("signature %s, base %s: same = %v, want %v", got, want, got == want, tc.same)
			}
		})
	}
}

// TestShapeSkeleton: the skeleton behind a signature, including a
// recursive type (which must not recurse forever).
func TestShapeSkeleton(t *testing.T) {
	const src = `package p

import "context"

type ID string
type List []List
type Node struct{ Next *Node }

func Kinds(ctx context.Context, id ID, n uint8, f float32, b []byte, m map[ID][]*Node, a [3]bool, l List, v ...int) (*Node, error) { return nil, nil }
`
	got := shapeSkeleton(funcSig(t, src, "Kinds"))
	want := "(ctx,string,uint,float32,[]uint,map[string][]*struct,[3]bool,[]@,[]int)(*struct,error)"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("skeleton (-want +got):\n%s", diff)
	}
}

// sourceImporter type-checks imports from source, once per test binary.
var sourceImporter types.Importer

// funcSig type-checks src and returns the signature of its function fn.
func funcSig(t *testing.T, src, fn string) *types.Signature {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sourceImporter == nil {
		sourceImporter = importer.ForCompiler(token.NewFileSet(), "source", nil)
	}
	conf := types.Config{Importer: sourceImporter}
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}}
	if _, err := conf.Check("p", fset, []*ast.File{f}, info); err != nil {
		t.Fatal(err)
	}
	for id, obj := range info.Defs {
		if fo, ok := obj.(*types.Func); ok && id.Name == fn {
			return fo.Type().(*types.Signature)
		}
	}
	t.Fatalf("no function %s", fn)
	return nil
}
