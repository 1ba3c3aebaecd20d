package generator

import (
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Wrapping another package's functions and methods. A user cannot
// annotate an SDK's paymentintent.New, so the directive goes above a
// blank var of the user's package that names it, which the compiler
// checks like any other reference:
//
//	//idem:ttl=24h key=params.IdempotencyKey
//	var _ = paymentintent.New
//
//	//idem:ttl=1h omit=r2.Response
//	var _ = (*github.IssuesService).Create
//
// From there on the target is analysed exactly as an annotated function
// of the package (pkgInfo.check takes the *types.Func and the position of
// the expression). A function becomes a method of the package's
// Idempotent (as= renames it when two packages' functions share a name);
// a method of another package's T becomes a method of IdempotentT, which
// embeds *T, as for the package's own types.

// varDirective is a var spec with //idem: lines in its doc comment or in
// the doc comment of its one-spec var declaration. spec is nil when the
// lines are above a var ( … ) group of several specs.
type varDirective struct {
	lines []*ast.Comment
	spec  *ast.ValueSpec
	specs int // of the declaration, when spec is nil
}

// varDirectives lists the //idem: lines of f's var declarations and marks
// them attached (they are not stray).
func varDirectives(f *ast.File, attached map[*ast.Comment]bool) []varDirective {
	var out []varDirective
	lines := func(cg *ast.CommentGroup) []*ast.Comment {
		l := directiveLines(cg)
		for _, c := range l {
			attached[c] = true
		}
		return l
	}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		top := lines(gd.Doc)
		if len(top) > 0 && len(gd.Specs) != 1 {
			out = append(out, varDirective{lines: top, specs: len(gd.Specs)})
			top = nil
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			l := append(append([]*ast.Comment(nil), top...), lines(vs.Doc)...)
			if len(l) > 0 {
				out = append(out, varDirective{lines: l, spec: vs})
			}
		}
	}
	return out
}

// target resolves what a var directive names: another package's function
// or method (and the expression, for positions), or why it cannot be
// wrapped (at the returned position).
func (v varDirective) target(info *types.Info, own *types.Package) (*types.Func, token.Pos, string) {
	const write = "write `var _ = pkg.Func` or `var _ = (*pkg.Type).Method`"
	s := v.spec
	if len(s.Names) != 1 || s.Names[0].Name != "_" || len(s.Values) != 1 || s.Type != nil {
		return nil, s.Pos(), "an //idem: directive above a var wraps another package's function or method: " + write + " (one blank var, no type)"
	}
	e := ast.Unparen(s.Values[0])
	text := types.ExprString(e)
	var obj types.Object
	switch x := e.(type) {
	case *ast.SelectorExpr:
		if sel := info.Selections[x]; sel != nil {
			switch sel.Kind() {
			case types.MethodExpr:
				if types.IsInterface(sel.Recv()) {
					if n, ok := types.Unalias(sel.Recv()).(*types.Named); ok && n.Obj().Pkg() == own {
						return nil, e.Pos(), text + " is a method of this package's interface " + n.Obj().Name() + ": put the //idem: directive in its doc comment inside the interface (its decorator is Idempotent" + n.Obj().Name() + ")"
					}
					return nil, e.Pos(), text + " is a method of an interface: name the method of a concrete type, (*pkg.Type).Method"
				}
				obj = sel.Obj()
			case types.MethodVal:
				return nil, e.Pos(), text + " is a method value (bound to one receiver): write the method expression, (*pkg.Type)." + x.Sel.Name + ", and wrap the receiver with the generated NewIdempotentType"
			default:
				return nil, e.Pos(), text + " is a field, not a function: " + write
			}
		} else {
			obj = info.Uses[x.Sel]
		}
	case *ast.Ident:
		obj = info.Uses[x]
	case *ast.IndexExpr, *ast.IndexListExpr:
		return nil, e.Pos(), text + ": an instance of another package's generic function cannot be wrapped (the generated call would need its type arguments, and its key their identity): wrap the call in a function of this package, generic or not, and annotate that"
	}
	switch o := obj.(type) {
	case *types.Func:
		if o.Pkg() == own {
			return nil, e.Pos(), text + " is this package's own: put the //idem: directive in its doc comment (directly above func " + o.Name() + ")"
		}
		return o, e.Pos(), ""
	case *types.Var:
		return nil, e.Pos(), text + " is a variable, not a function: " + write + " naming the function itself"
	}
	return nil, e.Pos(), text + " is not a function or a method expression: " + write
}

// collectVars checks the var directives of f.
func (pi *pkgInfo) collectVars(f *ast.File, attached map[*ast.Comment]bool) []*fn {
	var fns []*fn
	for _, v := range varDirectives(f, attached) {
		if v.spec == nil {
			pi.d.add(pi.fset.Position(v.lines[0].Slash), "//idem: directive above a var ( … ) group of %d: put it above the one `var _ = pkg.Func` it wraps", v.specs)
			continue
		}
		obj, at, problem := v.target(pi.pkg.TypesInfo, pi.pkg.Types)
		if problem != "" {
			parseDirectives(pi.fset, v.lines, pi.d) // its option errors too, in the same run
			pi.d.add(pi.fset.Position(at), "%s", problem)
			continue
		}
		x := pi.check(obj, at, v.lines, true)
		if x != nil && pi.checkNameable(x) {
			fns = append(fns, x)
		}
	}
	return fns
}

// checkAs applies as=, which only a function of another package takes.
func (pi *pkgInfo) checkAs(x *fn) bool {
	o, given := x.opts.given["as"]
	switch {
	case !given:
		return true
	case !x.foreign:
		pi.d.add(o.pos, "option as only applies above `var _ = pkg.Func`: a function of this package keeps its own name (rename the function)")
		return false
	case x.recv != nil:
		pi.d.add(o.pos, "option as does not apply to a method: Idempotent%s's wrapper shadows (*%s.%s).%s, so it keeps the method's name", x.recv.Name(), x.recv.Pkg().Name(), x.recv.Name(), x.obj.Name())
		return false
	}
	x.name = x.opts.as
	return true
}

// what names x in diagnostics: function F, method T.M, and for another
// package's, function pkg.F, method pkg.T.M.
func (x *fn) what() string {
	name := x.obj.Name()
	if x.recv != nil {
		name = x.recv.Name() + "." + name
	}
	if x.foreign {
		name = x.obj.Pkg().Name() + "." + name
	}
	if x.recv != nil {
		return "method " + name
	}
	return "function " + name
}

// paramPos is where a diagnostic about parameter i points: the parameter,
// or the directive's target for another package's function (its
// positions are in another file set, and not the user's to edit).
func (x *fn) paramPos(i int) token.Pos {
	if x.foreign {
		return x.pos
	}
	return x.sig.Params().At(i).Pos()
}

// checkNameable reports a signature the generated file cannot spell: a
// type of another module's internal package, or an unexported one.
func (pi *pkgInfo) checkNameable(x *fn) bool {
	check := func(what string, t types.Type) bool {
		if obj := pi.unnameable(t, map[types.Type]bool{}); obj != nil {
			pi.d.add(pi.fset.Position(x.pos), "%s: %s has type %s, which package %s cannot name (%s.%s is unexported or internal); wrap it in a function of the package that can, and annotate that",
				x.what(), what, pi.typeString(t), pi.pkg.Name, obj.Pkg().Path(), obj.Name())
			return false
		}
		return true
	}
	ok := true
	if x.recv != nil {
		ok = check("its receiver", x.recv.Type())
	}
	for i := 0; i < x.sig.Params().Len(); i++ {
		ok = check("parameter "+x.params[i].name, x.sig.Params().At(i).Type()) && ok
	}
	for i := 0; i < x.sig.Results().Len(); i++ {
		ok = check("result "+strconv.Itoa(i+1), x.sig.Results().At(i).Type()) && ok
	}
	return ok
}

// unnameable returns a type name inside t that the generated file cannot
// write, nil if there is none.
func (pi *pkgInfo) unnameable(t types.Type, seen map[types.Type]bool) *types.TypeName {
	if seen[t] {
		return nil
	}
	seen[t] = true
	switch t := t.(type) {
	case *types.Alias:
		if t.Obj().Pkg() != nil && t.Obj().Exported() && pi.nameable(t.Obj()) {
			return nil
		}
		return pi.unnameable(types.Unalias(t), seen)
	case *types.Named:
		if t.Obj().Pkg() != nil && !pi.nameable(t.Obj()) {
			if a, _ := pi.aliasFor(t); a == nil {
				return t.Obj()
			}
		}
		for i := 0; i < t.TypeArgs().Len(); i++ {
			if o := pi.unnameable(t.TypeArgs().At(i), seen); o != nil {
				return o
			}
		}
		return nil
	case *types.Pointer:
		return pi.unnameable(t.Elem(), seen)
	case *types.Slice:
		return pi.unnameable(t.Elem(), seen)
	case *types.Array:
		return pi.unnameable(t.Elem(), seen)
	case *types.Chan:
		return pi.unnameable(t.Elem(), seen)
	case *types.Map:
		if o := pi.unnameable(t.Key(), seen); o != nil {
			return o
		}
		return pi.unnameable(t.Elem(), seen)
	case *types.Signature:
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for i := 0; i < tup.Len(); i++ {
				if o := pi.unnameable(tup.At(i).Type(), seen); o != nil {
					return o
				}
			}
		}
	case *types.Struct:
		for i := 0; i < t.NumFields(); i++ {
			if o := pi.unnameable(t.Field(i).Type(), seen); o != nil {
				return o
			}
		}
	}
	return nil
}

// checkWrapperNames reports wrappers that would take one name: two
// functions wrapped as one method of Idempotent, one method wrapped twice,
// or two types of one name (whose wrapper types would both be
// IdempotentT). The package's own functions keep their names; the
// diagnostic goes to the var directive. It returns the functions left.
func (pi *pkgInfo) checkWrapperNames(fns []*fn) []*fn {
	byType := map[string]*fn{} // wrapper type name → its first function
	names := map[string]*fn{}  // wrapper type name + "." + wrapper name
	var out []*fn
	for _, pass := range []bool{false, true} {
		for _, x := range fns {
			if x.foreign != pass {
				continue
			}
			typeName := "Idempotent"
			if x.recv != nil {
				typeName += x.recv.Name()
			}
			if first := byType[typeName]; first != nil && first.recv != x.recv {
				pi.d.add(pi.fset.Position(x.pos), "%s: its wrapper type would be %s, which is already the wrapper type of %s (at %s): two types of one name cannot be wrapped in one package; wrap the methods of one of them in another package",
					x.what(), typeName, first.recv.Pkg().Name()+"."+first.recv.Name(), pi.d.relative(pi.fset.Position(first.pos), pi.fset.Position(x.pos)))
				continue
			} else if first == nil {
				byType[typeName] = x
			}
			key := typeName + "." + x.name
			if first := names[key]; first != nil {
				at := pi.d.relative(pi.fset.Position(first.pos), pi.fset.Position(x.pos))
				switch {
				case first.obj == x.obj:
					pi.d.add(pi.fset.Position(x.pos), "%s is wrapped twice (also at %s): remove one directive", x.what(), at)
				case x.recv == nil:
					pi.d.add(pi.fset.Position(x.pos), "%s: its wrapper would be %s.%s, which is already the wrapper of %s (at %s): give it another name (add `as=%s`)",
						x.what(), typeName, x.name, first.what()[len("function "):], at, pi.freeName(x, names))
				default:
					// Another package's T: its methods have distinct names.
					pi.d.add(pi.fset.Position(x.pos), "%s: its wrapper would be %s.%s, as is %s's (at %s)", x.what(), typeName, x.name, first.what(), at)
				}
				continue
			}
			names[key] = x
			out = append(out, x)
		}
	}
	// Keep the order of collect: it orders the generated file.
	kept := map[*fn]bool{}
	for _, x := range out {
		kept[x] = true
	}
	out = out[:0]
	for _, x := range fns {
		if kept[x] {
			out = append(out, x)
		}
	}
	return out
}

// freeName is the as= advised for a function whose name is taken: the
// package's name and the function's (SdkNew), numbered if need be.
func (pi *pkgInfo) freeName(x *fn, names map[string]*fn) string {
	base := upperFirst(x.obj.Pkg().Name()) + upperFirst(x.obj.Name())
	name := base
	for i := 2; names["Idempotent."+name] != nil || pi.scope[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	return name
}

// annotatedVars are the names (Spec.Name) of the functions f's var
// directives wrap, for checkNames; problems are left to the analysis.
func annotatedVars(p *packages.Package, fset *token.FileSet, f *ast.File) []namedFunc {
	var out []namedFunc
	for _, v := range varDirectives(f, map[*ast.Comment]bool{}) {
		if v.spec == nil {
			continue
		}
		obj, at, problem := v.target(p.TypesInfo, p.Types)
		if problem != "" {
			continue
		}
		opts, _ := parseDirectives(fset, v.lines, &diags{})
		local := obj.Name()
		if r := obj.Type().(*types.Signature).Recv(); r != nil {
			t := r.Type()
			if ptr, ok := t.(*types.Pointer); ok {
				t = ptr.Elem()
			}
			if named, ok := types.Unalias(t).(*types.Named); ok {
				local = named.Obj().Name() + "." + local
			}
		}
		nf := namedFunc{pkg: p, name: obj.Pkg().Path() + "." + local, display: obj.Pkg().Name() + "." + local + " (wrapped in " + p.Name + ")", pos: fset.Position(at)}
		if opts.name != "" {
			nf.name = opts.name
			if o, ok := opts.given["name"]; ok {
				nf.pos = o.pos
			}
		}
		out = append(out, nf)
	}
	return out
}

// foreignNames are the display name (pkg.F, pkg.T.M) and the default
// Spec.Name (import path and name) of another package's function.
func foreignNames(x *fn) (display, specName string) {
	local := x.obj.Name()
	if x.recv != nil {
		local = x.recv.Name() + "." + local
	}
	return x.obj.Pkg().Name() + "." + local, x.obj.Pkg().Path() + "." + local
}

// ForeignWrap is another package's function or method that a directive
// above `var _ = pkg.F` wraps in this package (for idemvet).
type ForeignWrap struct {
	Func *types.Func
	// Wrapper and Method name the guarded call: Idempotent.F, or
	// IdempotentT.M for a method of T; Method is as= when given.
	Wrapper, Method string
	// Spec is the var spec naming Func, whose own mention of it is no call.
	Spec *ast.ValueSpec
}

// AnnotatedForeignFuncs lists the other packages' functions and methods
// that f's var directives wrap (the ones that resolve; the generator
// reports the others).
func AnnotatedForeignFuncs(fset *token.FileSet, info *types.Info, own *types.Package, f *ast.File) []ForeignWrap {
	var out []ForeignWrap
	for _, v := range varDirectives(f, map[*ast.Comment]bool{}) {
		if v.spec == nil {
			continue
		}
		obj, _, problem := v.target(info, own)
		if problem != "" {
			continue
		}
		opts, _ := parseDirectives(fset, v.lines, &diags{})
		w := ForeignWrap{Func: obj, Wrapper: "Idempotent", Method: obj.Name(), Spec: v.spec}
		if opts.as != "" {
			w.Method = opts.as
		}
		if r := obj.Type().(*types.Signature).Recv(); r != nil {
			t := r.Type()
			if ptr, ok := t.(*types.Pointer); ok {
				t = ptr.Elem()
			}
			if named, ok := types.Unalias(t).(*types.Named); ok {
				w.Wrapper += named.Obj().Name()
			}
		}
		out = append(out, w)
	}
	return out
}

// check validates one annotated function: options, shape, parameters,
// key paths and results. obj is the package's own function (at its name)
// or, foreign, another package's function or method that a var _ = pkg.F
// directive names (at that expression). It returns nil after reporting
// problems.
func (pi *pkgInfo) check(obj *types.Func, at token.Pos, lines []*ast.Comment, foreign bool) *fn {
	opts, ok := parseDirectives(pi.fset, lines, pi.d)
	namePos := pi.fset.Position(at)
	sig := obj.Type().(*types.Signature)
	x := &fn{obj: obj, sig: sig, opts: opts, ctx: -1, name: obj.Name(), pos: at, foreign: foreign}
	if r := sig.Recv(); r != nil {
		t := r.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		named, _ := t.(*types.Named)
		if named == nil {
			pi.d.add(namePos, "cannot resolve the receiver of %s", obj.Name())
			return nil
		}
		x.recv = named.Obj()
		if foreign && named.TypeParams().Len() > 0 {
			pi.d.add(namePos, "%s: methods of another package's generic types are not supported: wrap the call in a method or function of this package (generic or not) and annotate that", x.what())
			return nil
		}
	}
	what := x.what()
	if foreign && sig.TypeParams().Len() > 0 {
		pi.d.add(namePos, "%s: generic functions of another package are not supported: wrap the call in a function of this package (generic or not) and annotate that", what)
		return nil
	}
	if !foreign && (obj.Name() == "init" || obj.Name() == "_" || (x.recv == nil && obj.Name() == "main" && pi.pkg.Name == "main")) {
		pi.d.add(namePos, "%s cannot be wrapped", what)
		return nil
	}
	if !pi.checkAs(x) {
		ok = false
	}
	if !pi.checkShape(x, what) {
		ok = false
	}
	if x.recv != nil {
		if n := sig.Recv().Name(); n != "" && n != "_" {
			for pi.scope[n] || types.Universe.Lookup(n) != nil {
				n += "_"
			}
			x.recvName = n
		}
	}
	if !ok {
		return nil
	}
	return x
}

// relative writes pos for a message about a diagnostic at from: the bare
// file name when both are in one directory, else the path relative to
// the run's directory (as diagnostics' own positions are).
func (d *diags) relative(pos, from token.Position) string {
	file := pos.Filename
	if filepath.Dir(pos.Filename) == filepath.Dir(from.Filename) {
		file = filepath.Base(file)
	} else if rel, err := filepath.Rel(d.base, file); err == nil && !strings.HasPrefix(rel, "..") {
		file = filepath.ToSlash(rel)
	}
	return file + ":" + strconv.Itoa(pos.Line) + ":" + strconv.Itoa(pos.Column)
}
