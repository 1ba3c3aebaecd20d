package generator

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/tools/go/ast/astutil"
)

// The pre-write check. The emitter's output is trusted by nobody: before a
// file is returned it is type-checked with the package's other files
// (their declarations; function bodies are left out, as the loader leaves
// them) against the packages the loader already has. A type error in the
// generated file is a defect of the generator, never the user's: the
// functions whose code holds it are refused with a diagnostic at their
// annotation that says so and names the identifier, and the file is
// generated again without them (at most maxCheckRounds times), so one
// defect never breaks the build of the whole package.

// maxCheckRounds bounds the generations of one file.
const maxCheckRounds = 4

// breakHelpers, set only by tests, edits the helpers before they are
// written: a deliberately broken emitter the pre-write check must catch.
var breakHelpers func([]helperDecl) []helperDecl

// precheckTime is the time spent in precheck, for the benchmark that
// measures what the check adds to generation.
var precheckTime atomic.Int64

// without returns fns less the refused ones.
func without(fns []*fn, refused map[*fn]bool) []*fn {
	var out []*fn
	for _, x := range fns {
		if !refused[x] {
			out = append(out, x)
		}
	}
	return out
}

// compiles reports whether src type-checks: the happy path, which needs
// no attribution.
func (pi *pkgInfo) compiles(src []byte) bool {
	defer func(start time.Time) { precheckTime.Add(int64(time.Since(start))) }(time.Now())
	f, err := parser.ParseFile(pi.fset, pi.out, src, parser.SkipObjectResolution)
	return err == nil && len(pi.typecheck(f, nil)) == 0
}

// precheck type-checks src, the file generated for fns, and returns the
// functions its type errors are in, after reporting each; nil when the
// file compiles.
func (pi *pkgInfo) precheck(src []byte, fns []*fn) map[*fn]bool {
	defer func(start time.Time) { precheckTime.Add(int64(time.Since(start))) }(time.Now())
	f, err := parser.ParseFile(pi.fset, pi.out, src, parser.SkipObjectResolution)
	if err != nil {
		refused := map[*fn]bool{}
		for _, x := range fns {
			refused[x] = true
			pi.d.add(pi.fset.Position(x.pos), "%s: not wrapped: an idemgen defect: the generated file does not parse (%v); please report it", x.what(), err)
		}
		return refused
	}
	if len(pi.typecheck(f, nil)) == 0 {
		return nil
	}
	// The failure path only: again, with what attributing the errors needs.
	info := &types.Info{
		Types: map[ast.Expr]types.TypeAndValue{},
		Defs:  map[*ast.Ident]types.Object{},
		Uses:  map[*ast.Ident]types.Object{},
	}
	errs := pi.typecheck(f, info)
	g := newDeclGraph(f, info, pi.checkedPkg(info), pi.std)
	first := map[*fn]types.Error{}
	for _, te := range errs {
		for _, x := range g.owners(g.at(te.Pos), fns, pi) {
			if _, ok := first[x]; !ok {
				first[x] = te
			}
		}
	}
	refused := map[*fn]bool{}
	for _, x := range fns {
		te, ok := first[x]
		if !ok {
			continue
		}
		refused[x] = true
		pos := pi.fset.Position(te.Pos)
		pi.d.add(pi.fset.Position(x.pos), "%s: not wrapped: an idemgen defect: its generated code does not compile at %s (%s:%d:%d: %s); the rest of %s is generated; please report it",
			x.what(), identAt(f, te.Pos), pos.Filename[strings.LastIndexAny(pos.Filename, `/\`)+1:], pos.Line, pos.Column, te.Msg, pos.Filename[strings.LastIndexAny(pos.Filename, `/\`)+1:])
	}
	return refused
}

// typecheck checks the package's declarations with f and returns the
// type errors in f, but those of imports that cannot be had here (the
// check cannot see into them; the build will).
func (pi *pkgInfo) typecheck(f *ast.File, info *types.Info) []types.Error {
	var errs []types.Error
	conf := types.Config{
		Importer:    pi.checkImporter(),
		FakeImportC: true,
		Sizes:       types.SizesFor("gc", runtime.GOARCH),
		Error: func(err error) {
			te, ok := err.(types.Error)
			if !ok || te.Fset.Position(te.Pos).Filename != pi.out || strings.Contains(te.Msg, "could not import") {
				return
			}
			errs = append(errs, te)
		},
	}
	_, _ = conf.Check(pi.pkg.PkgPath, pi.fset, append(pi.declFiles(), f), info)
	return errs
}

// checkedPkg is the package the last check with info made.
func (pi *pkgInfo) checkedPkg(info *types.Info) *types.Package {
	for id, obj := range info.Defs {
		if obj != nil && id.Name != "_" && obj.Pkg() != nil && obj.Pkg().Path() == pi.pkg.PkgPath {
			return obj.Pkg()
		}
	}
	return nil
}

// declFiles are the package's files as the check reads them: without the
// generated file, and without function bodies (only declarations
// matter; errors outside the generated file are not looked at).
func (pi *pkgInfo) declFiles() []*ast.File {
	if pi.checkFiles != nil {
		return pi.checkFiles
	}
	for _, f := range pi.pkg.Syntax {
		if pi.fset.Position(f.Pos()).Filename == pi.out {
			continue
		}
		c := *f
		c.Decls = make([]ast.Decl, len(f.Decls))
		for i, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				// No body (as for assembly) is no error but for a
				// generic function, which gets an empty one.
				empty := *fd
				empty.Body = nil
				if fd.Type.TypeParams != nil || fd.Recv != nil && hasTypeParams(fd.Recv) {
					empty.Body = &ast.BlockStmt{Lbrace: fd.Body.Lbrace, Rbrace: fd.Body.Rbrace}
				}
				d = &empty
			}
			c.Decls[i] = d
		}
		pi.checkFiles = append(pi.checkFiles, &c)
	}
	return pi.checkFiles
}

// hasTypeParams reports whether a receiver names type parameters
// (func (r *Repo[T]) M()).
func hasTypeParams(recv *ast.FieldList) bool {
	for _, f := range recv.List {
		t := f.Type
		if s, ok := t.(*ast.StarExpr); ok {
			t = s.X
		}
		switch t.(type) {
		case *ast.IndexExpr, *ast.IndexListExpr:
			return true
		}
	}
	return false
}

// checkImporter resolves an import path to the package the loader has:
// the package's imports and everything they import (one package per path
// in one load), then the extra packages the loader brought.
func (pi *pkgInfo) checkImporter() types.Importer {
	byPath := map[string]*types.Package{}
	var walk func(p *types.Package)
	walk = func(p *types.Package) {
		if byPath[p.Path()] != nil {
			return
		}
		byPath[p.Path()] = p
		for _, q := range p.Imports() {
			walk(q)
		}
	}
	for _, q := range pi.pkg.Types.Imports() {
		walk(q)
	}
	paths := make([]string, 0, len(pi.extra))
	for path := range pi.extra {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		walk(pi.extra[path])
	}
	return importerFunc(func(path string) (*types.Package, error) {
		if path == "unsafe" {
			return types.Unsafe, nil
		}
		// A package only reached through another's export data holds
		// what that one names: enough for the types the file spells,
		// not for the runtime's and standard functions and constants
		// the emitter calls on its own (time.Hour), which are then not
		// checked rather than reported missing.
		if p := byPath[path]; p != nil && (p.Complete() || !slices.Contains(outputImports, path) && path != protoPkg.Path()) {
			return p, nil
		}
		return nil, errNotLoaded
	})
}

var errNotLoaded = &notLoaded{}

type notLoaded struct{}

func (*notLoaded) Error() string { return "not loaded" }

// identAt names the identifier (pkg.Name or Name) at pos in f, or the
// innermost expression there.
func identAt(f *ast.File, pos token.Pos) string {
	path, _ := astutil.PathEnclosingInterval(f, pos, pos)
	for _, n := range path {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			return types.ExprString(n)
		case *ast.Ident:
			if len(path) > 1 {
				if sel, ok := path[1].(*ast.SelectorExpr); ok {
					return types.ExprString(sel)
				}
			}
			return n.Name
		case ast.Expr:
			return types.ExprString(n)
		}
	}
	return "?"
}

// declGraph is the generated file's top-level declarations (each spec of
// a var or type declaration apart) and which of them refer to which: what
// tells the function a type error belongs to.
type declGraph struct {
	spans []span
	refs  []map[int]bool
	// calls are the declarations that use each wrapped function (the
	// wrapper calls it, the self-check names it); names the type names
	// each declaration mentions.
	calls map[funcKey][]int
	names []map[*types.TypeName]bool
	// closures are the declarations each function's code reaches.
	closures map[*fn]map[int]bool
	std      *stdLib
}

type span struct{ pos, end token.Pos }

// funcKey identifies a wrapped function across the two checks: another
// package's by its object, the package's own (checked anew) by position.
type funcKey struct {
	obj types.Object
	pos token.Pos
}

func keyOf(obj types.Object, own *types.Package) funcKey {
	if f, ok := obj.(*types.Func); ok {
		obj = f.Origin()
	}
	if obj.Pkg() != nil && obj.Pkg().Path() == own.Path() {
		return funcKey{pos: obj.Pos()}
	}
	return funcKey{obj: obj}
}

func newDeclGraph(f *ast.File, info *types.Info, pkg *types.Package, std *stdLib) *declGraph {
	g := &declGraph{calls: map[funcKey][]int{}, closures: map[*fn]map[int]bool{}, std: std}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			g.spans = append(g.spans, span{d.Pos(), d.End()})
		case *ast.GenDecl:
			if d.Tok == token.IMPORT {
				continue
			}
			for _, s := range d.Specs {
				g.spans = append(g.spans, span{s.Pos(), s.End()})
			}
		}
	}
	g.refs = make([]map[int]bool, len(g.spans))
	g.names = make([]map[*types.TypeName]bool, len(g.spans))
	for i := range g.spans {
		g.refs[i], g.names[i] = map[int]bool{}, map[*types.TypeName]bool{}
	}
	for id, obj := range info.Uses {
		from := g.at(id.Pos())
		if from < 0 || obj == nil {
			continue
		}
		if pkg != nil && obj.Pkg() == pkg {
			if to := g.at(obj.Pos()); to >= 0 {
				if to != from {
					g.refs[from][to] = true
				}
				continue // the generated file's own
			}
		}
		if pkg != nil {
			if _, ok := obj.(*types.Func); ok {
				k := keyOf(obj, pkg)
				g.calls[k] = append(g.calls[k], from)
			}
		}
		g.mention(from, obj.Type())
	}
	for e, tv := range info.Types {
		if from := g.at(e.Pos()); from >= 0 {
			g.mention(from, tv.Type)
		}
	}
	return g
}

// mention records the type name of t (a named type or an alias) in node
// i: of another package than the standard library and the runtime.
func (g *declGraph) mention(i int, t types.Type) {
	var obj *types.TypeName
	switch t := t.(type) {
	case *types.Named:
		obj = t.Obj()
	case *types.Alias:
		obj = t.Obj()
	}
	if obj == nil || obj.Pkg() == nil || g.std.has(obj.Pkg()) || strings.HasPrefix(obj.Pkg().Path(), RuntimePath) {
		return
	}
	g.names[i][obj] = true
}

// at is the declaration holding pos, -1 if none.
func (g *declGraph) at(pos token.Pos) int {
	i := sort.Search(len(g.spans), func(i int) bool { return g.spans[i].end >= pos })
	if i < len(g.spans) && g.spans[i].pos <= pos {
		return i
	}
	return -1
}

// reach is the set of declarations from reaches.
func (g *declGraph) reach(from ...int) map[int]bool {
	seen := map[int]bool{}
	for len(from) > 0 {
		i := from[len(from)-1]
		from = from[:len(from)-1]
		if seen[i] {
			continue
		}
		seen[i] = true
		for j := range g.refs[i] {
			from = append(from, j)
		}
	}
	return seen
}

// owners are the functions whose code holds declaration n: those whose
// wrapper reaches it; else those whose own declarations n reaches (a Key
// companion); else those whose code mentions a type n mentions (a drift
// check); else every one.
func (g *declGraph) owners(n int, fns []*fn, pi *pkgInfo) []*fn {
	if n < 0 {
		return fns
	}
	count := map[int]int{}
	for _, x := range fns {
		if g.closures[x] == nil {
			g.closures[x] = g.reach(g.calls[keyOf(x.obj, pi.pkg.Types)]...)
		}
		for m := range g.closures[x] {
			count[m]++
		}
	}
	tests := []func(c map[int]bool) bool{
		func(c map[int]bool) bool { return c[n] },
		func(c map[int]bool) bool {
			for m := range g.reach(n) {
				if c[m] && count[m] == 1 {
					return true
				}
			}
			return false
		},
		func(c map[int]bool) bool {
			for m := range c {
				for obj := range g.names[m] {
					if g.names[n][obj] {
						return true
					}
				}
			}
			return false
		},
	}
	for _, test := range tests {
		var out []*fn
		for _, x := range fns {
			if test(g.closures[x]) {
				out = append(out, x)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return fns
}
