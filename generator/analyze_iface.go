package generator

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"iter"
	"strconv"

	"golang.org/x/tools/go/packages"
)

// Interface decorators. //idem: options in the doc comment of a method
// inside `type Carrier interface { … }`, or of the interface type itself,
// make the generator write IdempotentCarrier: a Carrier around an inner
// Carrier whose annotated methods run at most once per key and whose
// other methods (those of embedded interfaces too) call the inner one.
//
// A directive on the interface type applies to each method declared in
// its own body whose last result is error (the others are delegated);
// a method's own directive is read over it, option by option. Options
// that name one method's parameters, results or key space (key=,
// exclude=, omit=, order=, grace=, name=) belong on the method.

// ifaceOnlyOnMethod are the options an interface's own directive cannot
// carry: they name one method's parameters, results or key space.
var ifaceOnlyOnMethod = []string{"key", "exclude", "omit", "order", "grace", "name"}

// isInterface reports whether tn names an interface type.
func isInterface(tn *types.TypeName) bool {
	return tn != nil && types.IsInterface(tn.Type())
}

// ifaceDoc is the doc comment of an interface's type spec: its own, or
// the declaration's when it declares only this type.
func ifaceDoc(gd *ast.GenDecl, ts *ast.TypeSpec) *ast.CommentGroup {
	if ts.Doc != nil {
		return ts.Doc
	}
	if !gd.Lparen.IsValid() {
		return gd.Doc
	}
	return nil
}

func directiveLines(cg *ast.CommentGroup) []*ast.Comment {
	if cg == nil {
		return nil
	}
	var lines []*ast.Comment
	for _, c := range cg.List {
		if isDirective(c) {
			lines = append(lines, c)
		}
	}
	return lines
}

// errorLast reports whether sig's last result is error.
func errorLast(sig *types.Signature) bool {
	res := sig.Results()
	return res.Len() > 0 && types.Identical(res.At(res.Len()-1).Type(), errorType)
}

// interfaces yields the interface types gd declares (those with a method
// list), with their specs.
func interfaces(gd *ast.GenDecl) iter.Seq2[*ast.TypeSpec, *ast.InterfaceType] {
	return func(yield func(*ast.TypeSpec, *ast.InterfaceType) bool) {
		for _, spec := range gd.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok {
				continue
			}
			if it, ok := ts.Type.(*ast.InterfaceType); ok && it.Methods != nil && !yield(ts, it) {
				return
			}
		}
	}
}

// ifaceMethod is an annotated method of an interface, as written.
type ifaceMethod struct {
	iface     *ast.TypeSpec
	typeLines []*ast.Comment // the interface's own directive
	field     *ast.Field
	lines     []*ast.Comment // the method's own directive
	obj       *types.Func
}

// annotatedIfaceMethods lists the methods of the interfaces declared by
// gd that a directive annotates: those with lines of their own, and,
// under a directive on the interface, those whose last result is error.
// It reports nothing (collectIface does).
func annotatedIfaceMethods(info *types.Info, gd *ast.GenDecl) []ifaceMethod {
	if gd.Tok != token.TYPE {
		return nil
	}
	var out []ifaceMethod
	for ts, it := range interfaces(gd) {
		typeLines := directiveLines(ifaceDoc(gd, ts))
		for _, f := range it.Methods.List {
			if len(f.Names) == 0 {
				continue // an embedded interface (or a type term)
			}
			obj, _ := info.Defs[f.Names[0]].(*types.Func)
			if obj == nil {
				continue
			}
			lines := directiveLines(f.Doc)
			if len(lines) == 0 && (len(typeLines) == 0 || !errorLast(obj.Type().(*types.Signature))) {
				continue
			}
			out = append(out, ifaceMethod{iface: ts, typeLines: typeLines, field: f, lines: lines, obj: obj})
		}
	}
	return out
}

// AnnotatedInterfaceMethods returns the interface methods of f that an
// //idem: directive annotates (on the method or on its interface): the
// methods whose generated decorator runs them at most once per key. For
// tools (vet/idemvet); info is the package's type information.
func AnnotatedInterfaceMethods(info *types.Info, f *ast.File) []*types.Func {
	var out []*types.Func
	for _, decl := range f.Decls {
		if gd, ok := decl.(*ast.GenDecl); ok {
			for _, m := range annotatedIfaceMethods(info, gd) {
				out = append(out, m.obj)
			}
		}
	}
	return out
}

// ifaceNamedFuncs are the annotated methods of gd's interfaces as
// checkNames sees them.
func ifaceNamedFuncs(p *packages.Package, fset *token.FileSet, gd *ast.GenDecl) []namedFunc {
	var out []namedFunc
	for _, m := range annotatedIfaceMethods(p.TypesInfo, gd) {
		name := m.field.Names[0]
		nf := namedFunc{pkg: p, name: p.PkgPath + "." + m.iface.Name.Name + "." + name.Name,
			display: p.Name + "." + m.iface.Name.Name + "." + name.Name, pos: fset.Position(name.Pos())}
		opts, _ := parseDirectives(fset, m.lines, &diags{})
		if opts.name != "" {
			nf.name, nf.pos = opts.name, opts.given["name"].pos
		}
		out = append(out, nf)
	}
	return out
}

// collectIface checks the interfaces declared by gd that carry
// directives, marks their directive lines attached, and returns their
// annotated methods.
func (pi *pkgInfo) collectIface(gd *ast.GenDecl, attached map[*ast.Comment]bool) []*fn {
	var fns []*fn
	for ts, it := range interfaces(gd) {
		if typeLines, has := pi.attachIface(gd, ts, it, attached); has {
			fns = append(fns, pi.ifaceFns(gd, ts, typeLines)...)
		}
	}
	return fns
}

// attachIface marks the directive lines of interface ts and its methods
// attached, returns the interface's own, and reports whether it has any.
func (pi *pkgInfo) attachIface(gd *ast.GenDecl, ts *ast.TypeSpec, it *ast.InterfaceType, attached map[*ast.Comment]bool) ([]*ast.Comment, bool) {
	typeLines := directiveLines(ifaceDoc(gd, ts))
	has := len(typeLines) > 0
	for _, c := range typeLines {
		attached[c] = true
	}
	for _, f := range it.Methods.List {
		lines := directiveLines(f.Doc)
		for _, c := range lines {
			attached[c] = true
		}
		if len(lines) > 0 && len(f.Names) == 0 {
			pi.d.add(pi.fset.Position(lines[0].Slash), "//idem: on an embedded interface (%s) annotates nothing: its methods are delegated as they are; annotate them in their own interface, or declare the method in %s with its own //idem: line", types.ExprString(f.Type), ts.Name.Name)
		}
		has = has || len(lines) > 0
	}
	return typeLines, has
}

// ifaceFns returns the annotated methods of interface ts, each with the
// interface's options under its own.
func (pi *pkgInfo) ifaceFns(gd *ast.GenDecl, ts *ast.TypeSpec, typeLines []*ast.Comment) []*fn {
	tn := pi.ifaceType(ts)
	if tn == nil {
		return nil
	}
	base, baseOK := pi.ifaceOptions(ts, typeLines)
	good, ok := pi.ifaceMethodSet(ts, tn)
	if !ok {
		return nil
	}
	var fns []*fn
	n := 0
	for _, m := range annotatedIfaceMethods(pi.pkg.TypesInfo, &ast.GenDecl{Tok: token.TYPE, Specs: []ast.Spec{ts}, Doc: ifaceDoc(gd, ts)}) {
		n++
		opts, ok := options{}, false
		if baseOK {
			opts, ok = parseDirectivesOver(pi.fset, m.lines, pi.d, base)
		} else {
			opts, _ = parseDirectives(pi.fset, m.lines, pi.d) // the method's own problems; the interface's once
		}
		if o, given := opts.given["as"]; given { // the method's own: the interface's is refused above
			pi.d.add(o.pos, "%s", ifaceAs(ts.Name.Name))
			ok = false
		}
		name := m.field.Names[0]
		x := &fn{obj: m.obj, sig: m.obj.Type().(*types.Signature), opts: opts, ctx: -1, recv: tn, name: name.Name, pos: name.Pos()}
		if !pi.checkShape(x, "method "+ts.Name.Name+"."+name.Name) || !ok || !good {
			continue
		}
		fns = append(fns, x)
	}
	if n == 0 && len(typeLines) > 0 {
		pi.d.add(pi.fset.Position(typeLines[0].Slash), "//idem: on interface %s applies to no method: none of the methods declared in it returns error last", ts.Name.Name)
	}
	return fns
}

// ifaceType resolves interface ts; nil if it cannot be decorated.
func (pi *pkgInfo) ifaceType(ts *ast.TypeSpec) *types.TypeName {
	tn, _ := pi.pkg.TypesInfo.Defs[ts.Name].(*types.TypeName)
	namePos := pi.fset.Position(ts.Name.Pos())
	switch {
	case tn == nil:
		pi.d.add(namePos, "cannot resolve %s", ts.Name.Name)
		return nil
	case ts.TypeParams != nil:
		pi.d.add(namePos, "interface %s: generic interfaces are not supported (declare a non-generic interface with the instantiated methods and annotate that, or annotate the methods of a concrete implementation)", ts.Name.Name)
		return nil
	case ts.Assign.IsValid():
		pi.d.add(namePos, "interface %s is an alias: annotate the interface it stands for", ts.Name.Name)
		return nil
	}
	return tn
}

// ifaceOptions parses the interface's own directive lines, which hold the
// options every method shares.
func (pi *pkgInfo) ifaceOptions(ts *ast.TypeSpec, typeLines []*ast.Comment) (options, bool) {
	if len(typeLines) == 0 {
		return options{}, true
	}
	base, ok := parseDirectives(pi.fset, typeLines, pi.d)
	for _, n := range ifaceOnlyOnMethod {
		if o, given := base.given[n]; given {
			pi.d.add(o.pos, "option %s cannot be on interface %s: it names one method's parameters, results or key space; put it on the method's own //idem: line", n, ts.Name.Name)
			ok = false
		}
	}
	if o, given := base.given["as"]; given {
		pi.d.add(o.pos, "%s", ifaceAs(ts.Name.Name))
		ok = false
	}
	return base, ok
}

// ifaceMethodSet checks that a decorator can implement tn: ok is false
// for a constraint, good false when a method cannot be implemented
// outside its package (the methods are still checked, none wrapped).
func (pi *pkgInfo) ifaceMethodSet(ts *ast.TypeSpec, tn *types.TypeName) (good, ok bool) {
	namePos := pi.fset.Position(ts.Name.Pos())
	iface := tn.Type().Underlying().(*types.Interface)
	if !iface.IsMethodSet() {
		pi.d.add(namePos, "interface %s is a constraint (it has type terms), not a type a decorator can implement", ts.Name.Name)
		return false, false
	}
	good = true
	for i := 0; i < iface.NumMethods(); i++ {
		if m := iface.Method(i); !m.Exported() && m.Pkg() != pi.pkg.Types {
			pi.d.add(namePos, "interface %s: its method %s is unexported in package %s, so no decorator outside that package can implement %s", ts.Name.Name, m.Name(), m.Pkg().Path(), ts.Name.Name)
			good = false
		}
	}
	return good, true
}

// ifaceAs refuses as= on interface iface or one of its methods: the
// decorator implements the interface, so its methods keep their names.
func ifaceAs(iface string) string {
	return fmt.Sprintf("option as only applies above `var _ = pkg.Func`: Idempotent%s implements interface %s, so its methods keep their names", iface, iface)
}

// ifaceHint explains, for an interface method's key= path that names no
// parameter, that the implementation cannot be keyed.
func ifaceHint(x *fn, option string) string {
	if !isInterface(x.recv) || option != "key" {
		return ""
	}
	return " (an interface method has no receiver to key: implementations differ, and key= names parameters only)"
}

// annotatedElsewhere maps each annotated method of the package's
// interfaces to its interface: an interface that embeds another routes
// the embedded annotated methods through that one's decorator.
func (pi *pkgInfo) annotatedElsewhere() map[*types.Func]*types.TypeName {
	out := map[*types.Func]*types.TypeName{}
	for _, f := range pi.pkg.Syntax {
		if pi.fset.Position(f.Pos()).Filename == pi.out {
			continue
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, m := range annotatedIfaceMethods(pi.pkg.TypesInfo, gd) {
				if tn, ok := pi.pkg.TypesInfo.Defs[m.iface.Name].(*types.TypeName); ok {
					out[m.obj] = tn
				}
			}
		}
	}
	return out
}

// checkShape checks x's signature (error last) and names its results,
// parameters and context: the part of the analysis shared by functions,
// methods and interface methods.
func (pi *pkgInfo) checkShape(x *fn, what string) bool {
	ok := true
	if !errorLast(x.sig) {
		pi.d.add(pi.fset.Position(x.pos), "%s must return error as its last result (error, (R, error) or (R1, …, Rn, error))%s", what, x.foreignAdvice())
		ok = false
	} else {
		res := x.sig.Results()
		for i := 0; i < res.Len()-1; i++ {
			t := res.At(i).Type()
			x.result = append(x.result, t)
		}
		ok = pi.checkStream(x, what)
	}
	x.params = pi.params(x.sig)
	for i, p := range x.params {
		if p.isCtx && x.ctx < 0 {
			x.ctx = i
		}
	}
	return ok
}

// params names the wrapper's parameters: unnamed and blank ones get pN,
// and a name that would shadow something the wrapper body refers to (a
// package-level name, a predeclared identifier) gets a trailing _.
func (pi *pkgInfo) params(sig *types.Signature) []param {
	ps := make([]param, sig.Params().Len())
	used := map[string]bool{}
	for i := range ps {
		v := sig.Params().At(i)
		used[v.Name()] = true
		ps[i] = param{name: v.Name(), typ: v.Type(), isCtx: pi.types.isContext(v.Type())}
		switch v.Type().Underlying().(type) {
		case *types.Struct, *types.Array:
			ps[i].byPtr = !ps[i].isCtx
		}
	}
	if sig.Variadic() {
		ps[len(ps)-1].variadic = true
	}
	for i := range ps {
		n := ps[i].name
		if n == "" || n == "_" {
			n = "p" + strconv.Itoa(i)
		}
		for pi.scope[n] || types.Universe.Lookup(n) != nil || (n != ps[i].name && used[n]) {
			n += "_"
		}
		if n != ps[i].name {
			used[n] = true
		}
		ps[i].name = n
	}
	return ps
}

// foreignAdvice ends the error-result diagnostic of another package's function.
func (x *fn) foreignAdvice() string {
	if !x.foreign {
		return ""
	}
	return "; wrap it in a function of this package that returns an error, and annotate that"
}

// namedFunc is one annotated function's name, for checkNames.
type namedFunc struct {
	pkg     *packages.Package
	name    string
	display string         // pkg.Func or pkg.Type.Method
	pos     token.Position // of name=, else of the function's name
}
