package generator

import (
	"bytes"
	"go/token"
	"go/types"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"
	"golang.org/x/tools/imports"
)

// render writes the file of fp; nil after a diagnostic (since n). The
// file is type-checked before it is returned (verify_precheck.go): a function
// whose code does not compile is refused, and the file is rendered again
// without it.
func (pi *pkgInfo) render(fp *filePlan, n int) []byte {
	d, fns, since := pi.d, fp.fns, fp.since
	for round := 1; ; round++ {
		if round > 1 {
			pi.decide(fp, fns) // without the refused
		}
		src, clean := pi.emitFile(fp, fns, since)
		if src == nil || len(d.list) > n {
			return nil
		}
		if clean {
			return src
		}
		refused := pi.precheck(src, append(append([]*fn(nil), fns...), pi.steps...))
		if len(refused) == 0 {
			return src
		}
		fns, pi.steps = without(fns, refused), without(pi.steps, refused)
		n, since = len(d.list), len(d.list)
		if (len(fns) == 0 && len(pi.steps) == 0) || round == maxCheckRounds {
			return nil
		}
	}
}

// emitFile emits the file of fns and the package's steps, as fp decided
// it; nil after a diagnostic. Functions with bad directives
// were left out by collect; the others still go through key and path
// checks, so one run reports every problem. clean says the file type-checks: checked as rendered, while
// its imports are grouped (the same code; precheck reads the final one).
func (pi *pkgInfo) emitFile(fp *filePlan, fns []*fn, since int) (src []byte, clean bool) {
	d, out, n := pi.d, pi.out, since
	pi.emitted = map[*fn]bool{}
	e := newEmitter(pi, fns, fp)
	fp.drift.seal() // the analysis decided them (fileDrift); the writers only read them
	e.f.HeaderComment(Header)
	e.f.PackageComment("") // keeps the header apart from the package clause
	var decls []jen.Code
	for _, g := range e.groups(fns) {
		decls = append(decls, e.group(g)...)
	}
	for _, x := range pi.steps {
		decls = append(decls, e.stepWrapper(x)...)
	}
	if helpersWritten != nil {
		helpersWritten(fp, append(e.keyHelpersWritten(), e.codecHelpersWritten(len(d.list) > n)...))
	}
	if len(d.list) > n {
		return nil, false
	}
	decls = append(decls, e.errorTypesDecl(e.errs)...)
	sort.Slice(e.helperDecls, func(i, j int) bool { return e.helperDecls[i].name < e.helperDecls[j].name })
	if breakHelpers != nil {
		e.helperDecls = breakHelpers(e.helperDecls)
	}
	for _, h := range e.helperDecls {
		decls = append(decls, h.code)
	}
	decls = append(decls, e.checkDecls(fp.drift)...)
	for _, c := range decls {
		e.f.Add(c)
		e.f.Line()
	}
	var buf bytes.Buffer
	if err := e.f.Render(&buf); err != nil {
		d.add(token.Position{Filename: out}, "internal error rendering the generated code: %v", err)
		return nil, false
	}
	checked := make(chan bool, 1)
	go func() { checked <- pi.compiles(buf.Bytes()) }()
	src, err := imports.Process(out, buf.Bytes(), importOptions)
	clean = <-checked
	if err != nil {
		d.add(token.Position{Filename: out}, "internal error grouping the generated imports: %v", err)
		return nil, false
	}
	return wrapComments(src, maxCommentWidth), clean
}

// newEmitter starts the generated file of fns' package.
func newEmitter(pi *pkgInfo, fns []*fn, fp *filePlan) *emitter {
	e := &emitter{
		fileWriter: &fileWriter{
			pi: pi,
			f:  jen.NewFilePathName(pi.pkg.PkgPath, pi.pkg.Name),
			fileNames: fileNames{
				aliases:    map[string]string{},
				aliasUsed:  map[string]bool{},
				paramNames: paramNamesOf(fns, pi.steps),
				globals:    map[string]bool{},
			},
		},
		keyHelpers:   keyHelpers{keysWritten: map[helperKey]bool{}},
		codecWritten: map[string]bool{},
		plan:         fp,
	}
	for k := range pi.scope {
		e.globals[k] = true
	}
	for _, h := range fp.Helpers { // named by the analysis (helperNamer)
		if h.Name != "" {
			e.globals[h.Name] = true
			if dec := decoderOf(h.Name); dec != "" {
				e.globals[dec] = true
			}
		}
	}
	return e
}

// importOptions group the imports as goimports does (the standard library,
// a blank line, the others); FormatOnly: the file names every import it
// uses, and goimports need not search the module cache for one.
var importOptions = &imports.Options{FormatOnly: true, Comments: true, TabIndent: true, TabWidth: 8}

// groups splits fns by receiver (groupFns) and reserves the API names, which must
// be exactly Idempotent[T] / NewIdempotent[T].
func (e *fileWriter) groups(fns []*fn) []*group {
	gs := groupFns(fns)
	for _, g := range gs {
		suffix := ""
		if g.recv != nil {
			suffix = g.recv.Name()
		}
		for _, name := range []string{"Idempotent" + suffix, "NewIdempotent" + suffix} {
			if e.globals[name] {
				obj := e.pi.pkg.Types.Scope().Lookup(name)
				at := e.pi.fset.Position(obj.Pos())
				e.pi.d.add(e.pi.fset.Position(g.fns[0].pos), "package %s already declares %s (at %s:%d:%d); the generated wrappers need that name", e.pi.pkg.Name, name, filepath.Base(at.Filename), at.Line, at.Column)
			}
			e.globals[name] = true
		}
	}
	return gs
}

// group emits the wrapper type, its constructor and, per function, its
// wrapper, its Key helper and the begin helper they share.
func (e *emitter) group(g *group) []jen.Code {
	guardT := jen.Op("*").Add(e.qual(idemPkg, "Guard"))
	methods := namer{}
	for _, x := range g.fns {
		methods[x.name] = true
	}
	if isInterface(g.recv) {
		for i, it := 0, g.recv.Type().Underlying().(*types.Interface); i < it.NumMethods(); i++ {
			methods[it.Method(i).Name()] = true
		}
	}
	field := methods.get("g")
	out, typeName := e.groupType(g, field, guardT, methods)
	pick := e.picker(g, methods)
	for _, x := range g.fns {
		if isGeneric(x) {
			out = append(out, e.wrapper(x, typeName, field, e.genericNames(x))...)
			continue
		}
		names := helperNames{
			begin: pick("begin"+upperFirst(x.name), "idemBegin"+upperFirst(x.name)),
			key:   pick(x.name+"Key", x.name+"IdemKey"),
		}
		out = append(out, e.wrapper(x, typeName, field, names)...)
	}
	return out
}

// groupType emits the wrapper type of g and its constructor.
func (e *fileWriter) groupType(g *group, field string, guardT jen.Code, methods namer) ([]jen.Code, string) {
	switch {
	case g.recv == nil:
		typeName, ctor := "Idempotent", "NewIdempotent"
		return []jen.Code{
			jen.Commentf("%s runs the annotated functions of package %s at most once per key.", typeName, e.pi.pkg.Name).Line().
				Type().Id(typeName).Custom(jen.Options{Open: "struct{", Close: "}"}, jen.Id(field).Add(guardT)),
			jen.Commentf("%s returns the idempotent wrappers of package %s, guarded by g.", ctor, e.pi.pkg.Name).Line().
				Func().Id(ctor).Params(jen.Id("g").Add(guardT)).Op("*").Id(typeName).Block(
				jen.Return(jen.Op("&").Id(typeName).Values(jen.Dict{jen.Id(field): jen.Id("g")})),
			),
		}, typeName
	case isInterface(g.recv):
		typeName, ctor := "Idempotent"+g.recv.Name(), "NewIdempotent"+g.recv.Name()
		return e.decorator(g, typeName, ctor, field, methods), typeName
	case g.recv.Type().(*types.Named).TypeParams().Len() > 0:
		out := e.genericGroup(g, field, guardT) // render_generics.go
		methods[g.recv.Name()] = true
		return out, "Idempotent" + g.recv.Name()
	}
	t := g.recv.Name()
	typeName, ctor := "Idempotent"+t, "NewIdempotent"+t
	methods[t] = true
	recvT := e.typ(g.recv.Type()) // T, or pkg.T for another package's
	return []jen.Code{
		jen.Commentf("%s is a *%s whose annotated methods run at most once per key.", typeName, e.pi.typeString(g.recv.Type())).Line().
			Type().Id(typeName).Struct(jen.Op("*").Add(recvT), jen.Id(field).Add(guardT)),
		jen.Commentf("%s wraps t: its annotated methods are guarded by g, the others are t's own.", ctor).Line().
			Func().Id(ctor).Params(jen.Id("t").Op("*").Add(recvT), jen.Id("g").Add(guardT)).Op("*").Id(typeName).Block(
			jen.Return(jen.Op("&").Id(typeName).Values(jen.Dict{jen.Id(t): jen.Id("t"), jen.Id(field): jen.Id("g")})),
		),
	}, typeName
}

// picker hands out the helpers' names. They must not take a name the
// wrapper type already has: a wrapper, the guard field, or (for a method
// wrapper) a field or method promoted from *T, which a helper would
// silently shadow. pick takes the first free base, else the last one
// numbered.
func (e *fileWriter) picker(g *group, methods namer) (pick func(bases ...string) string) {
	taken := func(name string) bool {
		if methods[name] {
			return true
		}
		if g.recv == nil {
			return false
		}
		var t types.Type = types.NewPointer(g.recv.Type())
		if isInterface(g.recv) {
			t = g.recv.Type()
		}
		obj, _, _ := types.LookupFieldOrMethod(t, true, e.pi.pkg.Types, name)
		return obj != nil
	}
	return func(bases ...string) string {
		for _, b := range bases {
			if !taken(b) {
				methods[b] = true
				return b
			}
		}
		last := bases[len(bases)-1]
		for i := 2; ; i++ {
			if n := last + strconv.Itoa(i); !taken(n) {
				methods[n] = true
				return n
			}
		}
	}
}

// maxCommentWidth is the widest comment line the generated file holds:
// generated code is read in review.
const maxCommentWidth = 100

// wrapComments breaks comment lines of src wider than width at spaces,
// keeping their indentation (a word wider than width stays whole).
func wrapComments(src []byte, width int) []byte {
	var out bytes.Buffer
	for _, line := range strings.SplitAfter(string(src), "\n") {
		text := strings.TrimRight(line, "\n")
		indent := text[:len(text)-len(strings.TrimLeft(text, "\t"))]
		body, isComment := strings.CutPrefix(text[len(indent):], "// ")
		if !isComment || len(text) <= width {
			out.WriteString(line)
			continue
		}
		cur := indent + "//"
		for _, w := range strings.Fields(body) {
			if len(cur)+1+len(w) > width && cur != indent+"//" {
				out.WriteString(cur + "\n")
				cur = indent + "//"
			}
			cur += " " + w
		}
		out.WriteString(cur + "\n")
	}
	return out.Bytes()
}

// checkDecls declares the file's checks, with one comment for them all,
// as stringer does: a compile error below means the code above is stale.
func (e *fileWriter) checkDecls(drift *driftFacts) []jen.Code {
	checks, typed, funcs := e.driftChecks(drift)
	var out []jen.Code
	defs := append(e.checks, checks...)
	typed = append(e.typedChecks, typed...)
	if len(defs) > 0 && len(typed) > 0 {
		defs = append(defs, jen.Line()) // apart, or gofmt aligns the conversions with the types
	}
	if defs = append(defs, typed...); len(defs) > 0 {
		out = append(out, jen.Var().Defs(defs...))
	}
	out = append(out, e.checkFuncs...)
	out = append(out, funcs...)
	if len(out) == 0 {
		return nil
	}
	out[0] = jen.Comment("Build fails below if a wrapped signature or a type read above changed: run go generate.").
		Line().Add(out[0])
	return out
}
