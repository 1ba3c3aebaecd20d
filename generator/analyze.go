package generator

import (
	"go/ast"
	"go/token"
	"go/types"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/tools/go/packages"
)

// fn is one annotated function or method, checked.
type fn struct {
	obj  *types.Func
	sig  *types.Signature
	recv *types.TypeName // the receiver's type, nil for a free function
	// name is the wrapper's Go name: the function's own, or as= for a
	// function of another package.
	name string
	// pos is where diagnostics about the whole function point: its name,
	// or the target of a var _ = pkg.F directive.
	pos token.Pos
	// foreign: obj is another package's function or method, named by a
	// var _ = pkg.F directive in this package (analyze_foreign.go).
	foreign bool
	// recvName is the receiver's name in the source ("" when unnamed or
	// blank), renamed like a parameter when it would shadow something.
	recvName string
	// recvVar is the wrapper's receiver variable; a key= path that starts
	// with the receiver's name reads recvVar.T (the wrapped *T).
	recvVar string
	opts    options
	params  []param
	ctx     int          // index of the first context.Context parameter, or -1
	result  []types.Type // results before the final error (a stream's: its item type)
	// stream: the result is a stream (analyze_stream.go), wrapped by idem.Stream.
	stream *stream
	// resultFields name the fields of the result struct (several results).
	resultFields []string
	// notKeyed are the parameters and fields the default key leaves out as
	// no part of the call's identity, with why, for the doc line.
	notKeyed []string
	// inner is the decorator's field holding the wrapped implementation
	// of an interface method (recv is then the interface; analyze_iface.go).
	inner string
	// step: x is a step (//idem:step, analyze_steps.go), recorded under stepName
	// ("" for its own name) by its step wrapper.
	step     bool
	stepName string
	// plan is what the analysis decided about x (analyze_plan.go).
	plan *funcPlan
}

// param is one parameter of the wrapped function as the wrapper declares it.
type param struct {
	name     string // in the wrapper (renamed when it would shadow something)
	typ      types.Type
	variadic bool
	isCtx    bool
	// byPtr: the begin helper takes it by pointer (a struct or array:
	// copying it on every call would cost the hot path).
	byPtr bool
}

// pkgInfo is what the analysis of one package needs.
type pkgInfo struct {
	pkg   *packages.Package
	fset  *token.FileSet
	out   string          // absolute path of the generated file
	scope map[string]bool // package-scope names declared outside the generated file
	d     *diags
	types *wellKnown
	std   *stdLib
	// jsonReach caches, per package, the types a MarshalJSON of that
	// package may write (jsonWritten).
	jsonReach map[*types.Package]map[*types.TypeName]bool
	// steps are the package's step-annotated functions (collect).
	steps []*fn
	// extra are packages the generated code may import beyond the
	// package's own imports (the runtime), by path; checkFiles caches the
	// package's files as the pre-write check reads them (verify_precheck.go).
	extra      map[string]*types.Package
	checkFiles []*ast.File
	// emitted are the functions whose wrapper the last emitFile wrote.
	emitted map[*fn]bool
	// aliases index the aliases of the packages the package reaches by
	// the named type each stands for (render_types.go).
	aliases map[*types.TypeName][]*types.TypeName
	// unionVariants caches variants (analyze_types.go).
	unionVariants map[*types.Named][]types.Type
}

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

// checkShape checks x's signature (error last) and names its results,
// parameters and context: the part of the analysis shared by functions,
// methods and interface methods (analyze_iface.go).
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

// typeString prints t qualified relative to the package being generated.
func (pi *pkgInfo) typeString(t types.Type) string {
	return types.TypeString(t, func(p *types.Package) string {
		if p == pi.pkg.Types {
			return ""
		}
		return p.Name()
	})
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

func upperFirst(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

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
