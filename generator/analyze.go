package generator

import (
	"go/ast"
	"go/token"
	"go/types"
	"sort"

	"golang.org/x/tools/go/packages"
)

// collect finds the annotated functions of p, reporting directives that
// are attached to anything else.
func (pi *pkgInfo) collect() []*fn {
	var fns []*fn
	files := append([]*ast.File(nil), pi.pkg.Syntax...)
	sort.Slice(files, func(i, j int) bool {
		return pi.fset.Position(files[i].Pos()).Filename < pi.fset.Position(files[j].Pos()).Filename
	})
	for _, f := range files {
		if pi.fset.Position(f.Pos()).Filename == pi.out {
			continue
		}
		attached := map[*ast.Comment]bool{}
		for _, decl := range f.Decls {
			if gd, ok := decl.(*ast.GenDecl); ok {
				fns = append(fns, pi.collectIface(gd, attached)...)
				continue
			}
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Doc == nil {
				continue
			}
			var lines []*ast.Comment
			for _, c := range fd.Doc.List {
				if isDirective(c) {
					lines = append(lines, c)
					attached[c] = true
				}
			}
			if len(lines) == 0 {
				continue
			}
			obj, _ := pi.pkg.TypesInfo.Defs[fd.Name].(*types.Func)
			if obj == nil {
				pi.d.add(pi.fset.Position(fd.Name.Pos()), "cannot resolve %s", fd.Name.Name)
				continue
			}
			if isStep(lines) {
				if x := pi.checkStep(obj, fd.Name.Pos(), lines); x != nil {
					pi.steps = append(pi.steps, x)
				}
				continue
			}
			if x := pi.check(obj, fd.Name.Pos(), lines, false); x != nil {
				fns = append(fns, x)
			}
		}
		fns = append(fns, pi.collectVars(f, attached)...)
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				if isMangledDirective(c) {
					pi.d.add(pi.fset.Position(c.Slash), "\"// idem:\" is a plain comment, not a directive: write //idem: with no space and at least one option (gofmt turns a bare //idem: into // idem:)")
					continue
				}
				if isDirective(c) && !attached[c] {
					pi.d.add(pi.fset.Position(c.Slash), "//idem: directive must be in the doc comment of a function or method (directly above func, no blank line), of an interface type or one of its methods, or above `var _ = pkg.Func` naming another package's function")
				}
			}
		}
	}
	return pi.checkWrapperNames(fns)
}

// packageScope lists the package-level names declared in the package's
// files (p.Syntax), the generated file excepted: generated names must not
// collide with them. A package type-checked by someone else may hold more
// (its test files, its generated file): those are not the generator's to
// avoid, as its own loader never sees them.
func packageScope(p *packages.Package, fset *token.FileSet, out string) map[string]bool {
	files := map[string]bool{}
	for _, f := range p.Syntax {
		files[fset.Position(f.Pos()).Filename] = true
	}
	delete(files, out)
	m := map[string]bool{}
	s := p.Types.Scope()
	for _, n := range s.Names() {
		if files[fset.Position(s.Lookup(n).Pos()).Filename] {
			m[n] = true
		}
	}
	// Imports of the user's files are file-scoped and cannot clash with our
	// package-level names, but a package-level name may clash with our
	// imports: those are covered by the scope above.
	return m
}

// recvPointer is *T for a method of T: for a generic T, the instance
// with the method's own receiver type parameters (*Repo[T]).
func recvPointer(x *fn) types.Type {
	if x.sig.RecvTypeParams().Len() == 0 {
		return types.NewPointer(x.recv.Type())
	}
	t := x.sig.Recv().Type()
	if _, ok := t.(*types.Pointer); ok {
		return t
	}
	return types.NewPointer(t)
}
