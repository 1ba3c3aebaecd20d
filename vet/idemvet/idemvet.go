// Package idemvet is a go/analysis analyzer that keeps idemgen's guarantee
// honest: a wrapper protects only the calls that go through it, and only
// while the generated file matches its annotations.
//
// It reports
//
//   - bypass: a call of an //idem: annotated function or method, or a
//     function or method value taken from it, anywhere but in its package's
//     generated file, in any package of the program (annotated functions
//     are exported as analysis facts). A line may skip the wrapper on
//     purpose with "//idem:direct <reason>" on the line itself, on the line
//     above, or in the doc comment of the enclosing function; the reason is
//     required.
//   - step bypass: a direct call of a step-annotated function (//idem:step)
//     inside a function idemgen wraps: it runs again whenever the call
//     resumes; its step wrapper (FStep) records it. Elsewhere a step is an
//     ordinary function.
//   - stale: the package's generated file differs from what the generator
//     writes now (GenerateChecked on the pass's own files and types, byte
//     for byte), or is missing: "run go generate".
//   - lost cancellation: a wrapper called with context.Background() or
//     context.TODO() in a function that has a context.Context in scope.
//   - every problem the generator reports about //idem: directives, at the
//     same position.
//   - interface bypass: a call of an annotated interface method through
//     a value of an interface type while a variable holding that
//     interface's decorator (*IdempotentT) is in scope, and a call of a
//     concrete method that implements one (fedex.Book) likewise. Without
//     a decorator in scope neither is reported: the value may be wrapped
//     elsewhere (or be a decorator), which only data flow could tell.
//
// A direct call gets a suggested fix when a value of the package's
// *Idempotent wrapper type is in scope: call the wrapper's method instead;
// an interface bypass, to call the decorator in scope.
package idemvet

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/idemgen/idemgen/generator"
	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

// Analyzer is the idemvet analyzer.
var Analyzer = &analysis.Analyzer{
	Name:      "idemvet",
	Doc:       "report calls that bypass idemgen wrappers, stale generated wrappers, wrappers called with a fresh context, and //idem: directive problems",
	URL:       "https://github.com/idemgen/idemgen/blob/main/docs/GENERATOR.md",
	Run:       run,
	FactTypes: []analysis.Fact{new(annotated)},
}

var (
	checkTests = true
	output     = generator.DefaultOutput
)

func init() {
	Analyzer.Flags.BoolVar(&checkTests, "testfiles", true, "report direct calls of annotated functions in _test.go files too")
	Analyzer.Flags.StringVar(&output, "output", generator.DefaultOutput, "name of the generated file in each package (as idemgen -output)")
}

// annotated marks a function or method with //idem: directives: calls of
// it elsewhere than in its generated wrapper bypass the guard.
type annotated struct {
	// Wrapper is the generated type whose method of the same name is the
	// guarded call: Idempotent for a function, IdempotentT for a method
	// of T or of interface T (the decorator).
	Wrapper string
	// Interface: the method is an interface's, and Wrapper its decorator.
	Interface bool
	// Method is set for another package's function wrapped here (never
	// exported as a fact: the object is not this package's): the
	// wrapper's method, its name or as=.
	Method string
	// Step: the function is a step (//idem:step) and Wrapper its step
	// wrapper (FStep, or the method T.FStep).
	Step bool
}

func (*annotated) AFact() {}
func (f *annotated) String() string {
	if f.Step {
		return "step(" + f.Wrapper + ")"
	}
	if f.Interface {
		return "annotated(" + f.Wrapper + ", interface)"
	}
	return "annotated(" + f.Wrapper + ")"
}

// file is one file of the pass, classified.
type file struct {
	ast       *ast.File
	tok       *token.File
	name      string
	test      bool
	generated bool // the package's generated file
	// escapes are the //idem:direct comments of the file by line;
	// alone says which of them have no code before them on their line
	// (those cover the line below too).
	escapes map[int]*ast.Comment
	alone   map[int]bool
	// wraps are the `var _ = pkg.F` specs of directives: naming the
	// function there is no bypass.
	wraps map[*ast.ValueSpec]bool
}

func run(pass *analysis.Pass) (any, error) {
	files := classify(pass)
	local := exportFacts(pass, files)
	checkGenerated(pass, files, local)
	// Without an annotated function here or in any dependency there is
	// nothing to bypass and no wrapper to call: most packages of a
	// program (the standard library, to begin with) skip the walk.
	walk := len(local) > 0 || anyAnnotated(pass)
	var byName map[string][]ifaceMethod
	if walk {
		byName = interfaceMethods(pass, local)
	}
	for _, f := range files {
		if f.generated {
			continue // the one place allowed to call the annotated functions
		}
		reportReasonless(pass, f)
		if walk {
			checkCalls(pass, f, local, byName)
		}
	}
	return nil, nil
}

// anyAnnotated reports whether a dependency of the package has an
// annotated function (facts travel with the dependencies' export data).
func anyAnnotated(pass *analysis.Pass) bool {
	for _, f := range pass.AllObjectFacts() {
		if _, ok := f.Fact.(*annotated); ok {
			return true
		}
	}
	return false
}

func classify(pass *analysis.Pass) []*file {
	var files []*file
	for _, af := range pass.Files {
		tf := pass.Fset.File(af.Pos())
		if tf == nil {
			continue
		}
		f := &file{ast: af, tok: tf, name: tf.Name(), test: strings.HasSuffix(tf.Name(), "_test.go"), escapes: map[int]*ast.Comment{}, alone: map[int]bool{}}
		f.generated = !f.test && filepath.Base(f.name) == output && isGenerated(af)
		for _, cg := range af.Comments {
			for _, c := range cg.List {
				if _, ok := generator.ParseDirectEscape(c.Text); ok {
					f.escapes[tf.Line(c.Slash)] = c
				}
			}
		}
		if len(f.escapes) > 0 {
			src, err := readFile(pass, f.name)
			for line, c := range f.escapes {
				start, at := tf.Offset(tf.LineStart(line)), tf.Offset(c.Slash)
				f.alone[line] = err == nil && at <= len(src) && strings.TrimSpace(string(src[start:at])) == ""
			}
		}
		files = append(files, f)
	}
	return files
}

// isGenerated reports whether the file starts with idemgen's header.
func isGenerated(f *ast.File) bool {
	return len(f.Comments) > 0 && f.Comments[0].Pos() < f.Package && f.Comments[0].List[0].Text == generator.Header
}

// exportFacts marks the annotated functions of the package's own files,
// and returns them by object.
func exportFacts(pass *analysis.Pass, files []*file) map[*types.Func]*annotated {
	local := map[*types.Func]*annotated{}
	for _, f := range files {
		if f.test {
			continue // the generator never wraps a function of a test file
		}
		for _, decl := range f.ast.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			obj, _ := pass.TypesInfo.Defs[fd.Name].(*types.Func)
			if obj == nil {
				continue
			}
			if f.generated || fd.Doc == nil || !hasDirective(fd.Doc) {
				continue
			}
			if isStepDoc(fd.Doc) {
				fact := &annotated{Step: true, Wrapper: generator.StepWrapperName(obj.Name())}
				local[obj] = fact
				pass.ExportObjectFact(obj, fact)
				continue
			}
			fact := &annotated{Wrapper: "Idempotent"}
			if recv := recvNamed(obj); recv != nil {
				fact.Wrapper += recv.Obj().Name()
			}
			local[obj] = fact
			pass.ExportObjectFact(obj, fact)
		}
		if f.generated {
			continue
		}
		// Another package's functions wrapped here: calls of them from
		// this package bypass the wrapper (their facts cannot be exported:
		// the objects are not this package's).
		for _, w := range generator.AnnotatedForeignFuncs(pass.Fset, pass.TypesInfo, pass.Pkg, f.ast) {
			if f.wraps == nil {
				f.wraps = map[*ast.ValueSpec]bool{}
			}
			f.wraps[w.Spec] = true
			local[w.Func] = &annotated{Wrapper: w.Wrapper, Method: w.Method}
		}
		for _, obj := range generator.AnnotatedInterfaceMethods(pass.TypesInfo, f.ast) {
			recv := recvNamed(obj)
			if recv == nil {
				continue
			}
			fact := &annotated{Wrapper: "Idempotent" + recv.Obj().Name(), Interface: true}
			local[obj] = fact
			pass.ExportObjectFact(obj, fact)
		}
	}
	return local
}

// isStepDoc reports whether doc holds a step directive (//idem:step).
func isStepDoc(doc *ast.CommentGroup) bool {
	for _, c := range doc.List {
		if generator.IsStepDirective(c.Text) {
			return true
		}
	}
	return false
}

// guarded reports whether fd is a function idemgen wraps (an //idem:
// directive other than a step's): what it calls runs again when a
// successor takes its call over.
func guarded(fd *ast.FuncDecl) bool {
	return fd != nil && fd.Doc != nil && hasDirective(fd.Doc) && !isStepDoc(fd.Doc)
}

func hasDirective(doc *ast.CommentGroup) bool {
	for _, c := range doc.List {
		if generator.IsDirective(c.Text) {
			return true
		}
	}
	return false
}

func recvNamed(fn *types.Func) *types.Named {
	r := fn.Signature().Recv()
	if r == nil {
		return nil
	}
	t := r.Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, _ := types.Unalias(t).(*types.Named)
	return n
}

func isContext(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "context" && n.Obj().Name() == "Context"
}

// checkGenerated runs the generator's engine on the package as the pass
// has it and reports its diagnostics, or a generated file that differs
// from what it would write now.
func checkGenerated(pass *analysis.Pass, files []*file, local map[*types.Func]*annotated) {
	var src []*file
	var gen *file
	mentions := false
	var firstDirective token.Position // of a package that wraps only other packages' functions
	for _, f := range files {
		if f.test {
			continue
		}
		src = append(src, f)
		if filepath.Base(f.name) == output {
			gen = f
			continue
		}
		for _, cg := range f.ast.Comments {
			for _, c := range cg.List {
				if generator.IsDirective(c.Text) || strings.HasPrefix(c.Text, "// idem:") {
					mentions = true
				}
				if p := pass.Fset.Position(c.Slash); generator.IsDirective(c.Text) && (!firstDirective.IsValid() || p.Filename < firstDirective.Filename || (p.Filename == firstDirective.Filename && p.Offset < firstDirective.Offset)) {
					firstDirective = p
				}
			}
		}
	}
	// As the generator's own loader: only a package with a directive, or
	// with a generated file that may now be stale, costs a run.
	if len(src) == 0 || (!mentions && gen == nil) {
		return
	}
	out := filepath.Join(filepath.Dir(src[0].name), output)
	asts := make([]*ast.File, len(src))
	for i, f := range src {
		asts[i] = f.ast
	}
	content, problems := generator.GenerateChecked(generator.Checked{Fset: pass.Fset, Files: asts, Types: pass.Pkg, Info: pass.TypesInfo, Output: out})
	for _, d := range problems {
		pass.Reportf(position(pass, files, d.Pos), "%s", d.Msg)
	}
	if len(problems) > 0 {
		return
	}
	at := firstAnnotation(pass, local)
	if at == token.NoPos && firstDirective.IsValid() {
		// No function of the package is annotated: its directives are
		// above var _ = pkg.Func lines wrapping other packages' functions.
		at = position(pass, files, firstDirective)
	}
	switch {
	case content == nil && gen != nil && isGenerated(gen.ast):
		// At the package clause of the package's first own file: the
		// generated file is not where the reader looks.
		at := gen.ast.Package
		for _, f := range src {
			if f != gen {
				at = f.ast.Package
				break
			}
		}
		pass.Reportf(at, "%s is stale: the package has no //idem: functions any more (run go generate)", output)
	case content == nil:
	case gen == nil:
		pass.Reportf(at, "%s is missing: run go generate", output)
	default:
		old, err := readFile(pass, gen.name)
		if err != nil {
			pass.Reportf(at, "cannot read %s: %v", output, err)
		} else if !bytes.Equal(old, content) {
			pass.Reportf(at, "%s is stale: it differs from what idemgen writes for these annotations now (run go generate)", output)
		}
	}
}

func readFile(pass *analysis.Pass, name string) ([]byte, error) {
	if pass.ReadFile != nil {
		return pass.ReadFile(name)
	}
	return os.ReadFile(name)
}

// firstAnnotation is the first //idem: line of the package's annotated
// functions, in file and line order: where a stale file is reported.
func firstAnnotation(pass *analysis.Pass, local map[*types.Func]*annotated) token.Pos {
	var at []token.Pos
	for obj := range local {
		if obj.Pkg() == pass.Pkg { // not another package's function wrapped here
			at = append(at, obj.Pos())
		}
	}
	if len(at) == 0 {
		return token.NoPos
	}
	sort.Slice(at, func(i, j int) bool {
		a, b := pass.Fset.Position(at[i]), pass.Fset.Position(at[j])
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Offset < b.Offset
	})
	// The name of the function: its //idem: line is in its doc comment,
	// found through the syntax (for an interface method, in its own doc
	// or else in its interface's).
	first := func(docs ...*ast.CommentGroup) token.Pos {
		for _, doc := range docs {
			if doc == nil {
				continue
			}
			for _, c := range doc.List {
				if generator.IsDirective(c.Text) {
					return c.Slash
				}
			}
		}
		return token.NoPos
	}
	for _, f := range pass.Files {
		if f.Pos() <= at[0] && at[0] < f.End() {
			for _, decl := range f.Decls {
				switch decl := decl.(type) {
				case *ast.FuncDecl:
					if decl.Name.Pos() == at[0] {
						if p := first(decl.Doc); p.IsValid() {
							return p
						}
					}
				case *ast.GenDecl:
					for _, spec := range decl.Specs {
						ts, ok := spec.(*ast.TypeSpec)
						if !ok || at[0] < ts.Pos() || at[0] >= ts.End() {
							continue
						}
						it, ok := ts.Type.(*ast.InterfaceType)
						if !ok {
							continue
						}
						for _, m := range it.Methods.List {
							if len(m.Names) > 0 && m.Names[0].Pos() == at[0] {
								if p := first(m.Doc, ts.Doc, decl.Doc); p.IsValid() {
									return p
								}
							}
						}
					}
				}
			}
		}
	}
	return at[0]
}

// position turns a generator diagnostic's position back into a token.Pos
// of the pass.
func position(pass *analysis.Pass, files []*file, p token.Position) token.Pos {
	for _, f := range files {
		if f.name != p.Filename {
			continue
		}
		if p.Offset > 0 && p.Offset <= f.tok.Size() {
			return f.tok.Pos(p.Offset)
		}
		if p.Line >= 1 && p.Line <= f.tok.LineCount() {
			return f.tok.LineStart(p.Line) + token.Pos(max(p.Column-1, 0))
		}
		return f.ast.Package
	}
	if len(pass.Files) > 0 {
		return pass.Files[0].Package
	}
	return token.NoPos
}

// reportReasonless reports //idem:direct escapes that give no reason.
func reportReasonless(pass *analysis.Pass, f *file) {
	if f.test && !checkTests {
		return
	}
	for _, c := range f.escapes {
		if reason, _ := generator.ParseDirectEscape(c.Text); reason == "" {
			pass.Reportf(c.Slash, "//idem:direct needs a reason: //idem:direct <why this call may skip the idempotent wrapper>")
		}
	}
}

// checkCalls reports the references to annotated functions in f (calls,
// function and method values) and the wrapper calls given a fresh context.
func checkCalls(pass *analysis.Pass, f *file, local map[*types.Func]*annotated, byName map[string][]ifaceMethod) {
	var stack []ast.Node
	var enclosing *ast.FuncDecl
	ast.Inspect(f.ast, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		switch n := n.(type) {
		case *ast.FuncDecl:
			enclosing = n
		case *ast.ValueSpec:
			if f.wraps[n] {
				stack = stack[:len(stack)-1]
				return false // var _ = pkg.F under a directive: what it wraps
			}
		case *ast.Ident:
			if f.test && !checkTests {
				return true
			}
			fn, _ := pass.TypesInfo.Uses[n].(*types.Func)
			if fn == nil {
				return true
			}
			fn = fn.Origin()
			fact := local[fn]
			if fact == nil {
				var imported annotated
				if fn.Pkg() == pass.Pkg || !pass.ImportObjectFact(fn, &imported) {
					if len(byName[fn.Name()]) > 0 && !escaped(f, n, enclosing) {
						reportImplementationBypass(pass, n, fn, byName[fn.Name()], stack)
					}
					return true
				}
				fact = &imported
			}
			if escaped(f, n, enclosing) {
				return true
			}
			if fact.Step {
				if guarded(enclosing) && enclosing.Pos() <= n.Pos() && n.Pos() < enclosing.End() {
					reportStepBypass(pass, n, fn, fact, enclosing)
				}
				return true
			}
			if fact.Interface {
				reportInterfaceBypass(pass, n, fn, fact, stack)
				return true
			}
			reportBypass(pass, n, fn, fact, stack)
		case *ast.CallExpr:
			checkContext(pass, n, local)
		}
		return true
	})
}

// escaped reports whether an //idem:direct comment covers the reference
// at id: on its line, alone on the line above, or in the enclosing
// function's doc comment. (An escape with no reason still covers it: the
// missing reason is its own diagnostic, at the comment.)
func escaped(f *file, id *ast.Ident, enclosing *ast.FuncDecl) bool {
	line := f.tok.Line(id.Pos())
	if f.escapes[line] != nil || (f.escapes[line-1] != nil && f.alone[line-1]) {
		return true
	}
	if enclosing != nil && enclosing.Doc != nil && enclosing.Pos() <= id.Pos() && id.Pos() < enclosing.End() {
		for _, c := range enclosing.Doc.List {
			if _, ok := generator.ParseDirectEscape(c.Text); ok {
				return true
			}
		}
	}
	return false
}

// reportStepBypass reports a step called directly inside a guarded
// function: it runs again whenever the call is resumed.
func reportStepBypass(pass *analysis.Pass, id *ast.Ident, fn *types.Func, fact *annotated, enclosing *ast.FuncDecl) {
	name := fn.Name()
	if recv := recvNamed(fn); recv != nil {
		name = recv.Obj().Name() + "." + name
	}
	pass.Reportf(id.Pos(), "%s is a step (//idem:step) called directly inside the guarded %s: it runs again when the call resumes after a takeover or a retry; call %s, or mark a deliberate bypass with //idem:direct <reason>",
		name, enclosing.Name.Name, fact.Wrapper)
}

func reportBypass(pass *analysis.Pass, id *ast.Ident, fn *types.Func, fact *annotated, stack []ast.Node) {
	name := fn.Name()
	if recv := recvNamed(fn); recv != nil {
		name = recv.Obj().Name() + "." + name
	}
	if fn.Pkg() != pass.Pkg {
		name = fn.Pkg().Name() + "." + name
	}
	// The expression that names the function: id, or x.id.
	var expr ast.Expr = id
	if len(stack) >= 2 {
		if sel, ok := stack[len(stack)-2].(*ast.SelectorExpr); ok && sel.Sel == id {
			expr = sel
		}
	}
	var call *ast.CallExpr
	up := 2 // the parent of expr, from the end of the stack
	if expr != ast.Expr(id) {
		up = 3
	}
	var fun ast.Expr = expr
	if len(stack) >= up {
		// An explicit instantiation, Publish[string](…), is called too.
		switch ix := stack[len(stack)-up].(type) {
		case *ast.IndexExpr:
			if ix.X == expr {
				fun, up = ix, up+1
			}
		case *ast.IndexListExpr:
			if ix.X == expr {
				fun, up = ix, up+1
			}
		}
	}
	if len(stack) >= up {
		if c, ok := stack[len(stack)-up].(*ast.CallExpr); ok && ast.Unparen(c.Fun) == fun {
			call = c
		}
	}
	what := "a value of"
	if call != nil {
		what = "a direct call of"
	}
	wrapper := fact.Wrapper + "." + fn.Name()
	if fact.Method != "" {
		wrapper = fact.Wrapper + "." + fact.Method
	}
	if fn.Signature().TypeParams().Len() > 0 {
		// A generic function's wrapper is a generic function of its package.
		wrapper = "Idempotent" + strings.ToUpper(fn.Name()[:1]) + fn.Name()[1:]
	}
	d := analysis.Diagnostic{
		Pos:     id.Pos(),
		End:     id.End(),
		Message: fmt.Sprintf("%s %s bypasses its idempotent wrapper (%s); call the wrapper, or mark a deliberate bypass with //idem:direct <reason>", what, name, wrapper),
	}
	if call != nil && fact.Wrapper == "Idempotent" && fact.Method == "" { // not for another package's function wrapped here
		if v := wrapperInScope(pass, id.Pos(), fn); v != nil {
			d.SuggestedFixes = []analysis.SuggestedFix{{
				Message:   fmt.Sprintf("call %s.%s (the wrapper)", v.Name(), fn.Name()),
				TextEdits: []analysis.TextEdit{{Pos: expr.Pos(), End: expr.End(), NewText: []byte(v.Name() + "." + fn.Name())}},
			}}
		}
	}
	pass.Report(d)
}

// reportInterfaceBypass reports a call of an annotated interface method
// through a plain interface value where a decorator of that interface is
// in scope: the call skips the decorator the code has at hand. A call
// through the interface with no decorator in scope is not reported: the
// value may well be a decorator (the drop-in use), which only the
// program's data flow could tell.
func reportInterfaceBypass(pass *analysis.Pass, id *ast.Ident, fn *types.Func, fact *annotated, stack []ast.Node) {
	if len(stack) < 3 {
		return
	}
	sel, ok := stack[len(stack)-2].(*ast.SelectorExpr)
	if !ok || sel.Sel != id {
		return
	}
	call, ok := stack[len(stack)-3].(*ast.CallExpr)
	if !ok || ast.Unparen(call.Fun) != ast.Expr(sel) {
		return // a method value or expression: not a call through a value
	}
	if tv, ok := pass.TypesInfo.Types[sel.X]; !ok || !types.IsInterface(tv.Type) {
		return
	}
	d := decoratorInScope(pass, id.Pos(), fn, fact)
	if d == nil {
		return
	}
	recv := recvNamed(fn)
	name := recv.Obj().Name() + "." + fn.Name()
	if fn.Pkg() != pass.Pkg {
		name = fn.Pkg().Name() + "." + name
	}
	pass.Report(analysis.Diagnostic{
		Pos:     id.Pos(),
		End:     id.End(),
		Message: fmt.Sprintf("a call of %s through %s bypasses the decorator %s in scope (%s.%s); call %s.%s, or mark a deliberate bypass with //idem:direct <reason>", name, types.ExprString(sel.X), d.Name(), fact.Wrapper, fn.Name(), d.Name(), fn.Name()),
		SuggestedFixes: []analysis.SuggestedFix{{
			Message:   fmt.Sprintf("call %s.%s (the decorator)", d.Name(), fn.Name()),
			TextEdits: []analysis.TextEdit{{Pos: sel.X.Pos(), End: sel.X.End(), NewText: []byte(d.Name())}},
		}},
	})
}

// ifaceMethod is an annotated interface method and its fact.
type ifaceMethod struct {
	fn   *types.Func
	fact *annotated
}

// interfaceMethods lists the annotated interface methods the package can
// see (its own and its dependencies'), by method name.
func interfaceMethods(pass *analysis.Pass, local map[*types.Func]*annotated) map[string][]ifaceMethod {
	out := map[string][]ifaceMethod{}
	add := func(obj types.Object, fact *annotated) {
		if fn, ok := obj.(*types.Func); ok && fact.Interface {
			out[fn.Name()] = append(out[fn.Name()], ifaceMethod{fn, fact})
		}
	}
	for fn, fact := range local {
		add(fn, fact)
	}
	for _, f := range pass.AllObjectFacts() {
		if fact, ok := f.Fact.(*annotated); ok && f.Object.Pkg() != pass.Pkg {
			add(f.Object, fact)
		}
	}
	return out
}

// reportImplementationBypass reports a call of a concrete method that
// implements an annotated interface method, where a variable holding
// that interface's decorator is in scope: the call skips the decorator
// the code has at hand. No fix: which value the decorator wraps is not
// known.
func reportImplementationBypass(pass *analysis.Pass, id *ast.Ident, fn *types.Func, cands []ifaceMethod, stack []ast.Node) {
	if recv := fn.Signature().Recv(); recv == nil || types.IsInterface(recv.Type()) || len(stack) < 3 || isGeneratedType(recvNamed(fn)) {
		return
	}
	sel, ok := stack[len(stack)-2].(*ast.SelectorExpr)
	if !ok || sel.Sel != id {
		return
	}
	if call, ok := stack[len(stack)-3].(*ast.CallExpr); !ok || ast.Unparen(call.Fun) != ast.Expr(sel) {
		return
	}
	tv, ok := pass.TypesInfo.Types[sel.X]
	if !ok || tv.Type == nil {
		return
	}
	for _, m := range cands {
		recv := recvNamed(m.fn)
		if recv == nil {
			continue
		}
		iface, ok := recv.Underlying().(*types.Interface)
		if !ok || !(types.Implements(tv.Type, iface) || types.Implements(types.NewPointer(tv.Type), iface)) {
			continue
		}
		d := decoratorInScope(pass, id.Pos(), m.fn, m.fact)
		if d == nil {
			continue
		}
		name := recv.Obj().Name()
		if m.fn.Pkg() != pass.Pkg {
			name = m.fn.Pkg().Name() + "." + name
		}
		typ := types.TypeString(tv.Type, func(p *types.Package) string {
			if p == pass.Pkg {
				return ""
			}
			return p.Name()
		})
		pass.Reportf(id.Pos(), "a direct call of %s.%s bypasses the decorator %s in scope (%s.%s): %s implements %s, whose %s is annotated; call %s.%s, or mark a deliberate bypass with //idem:direct <reason>",
			typ, fn.Name(), d.Name(), m.fact.Wrapper, fn.Name(), typ, name, fn.Name(), d.Name(), fn.Name())
		return
	}
}

// isGeneratedType reports whether t is a generated wrapper or decorator
// type: IdempotentX with its constructor NewIdempotentX beside it.
func isGeneratedType(t *types.Named) bool {
	if t == nil || t.Obj().Pkg() == nil || !strings.HasPrefix(t.Obj().Name(), "Idempotent") {
		return false
	}
	_, ok := t.Obj().Pkg().Scope().Lookup("New" + t.Obj().Name()).(*types.Func)
	return ok
}

// decoratorInScope finds a variable of type *IdempotentT, the decorator
// of fn's interface T (fact.Wrapper in fn's package), visible at pos,
// innermost first.
func decoratorInScope(pass *analysis.Pass, pos token.Pos, fn *types.Func, fact *annotated) *types.Var {
	var found *types.Var
	eachVar(pass, pos, func(v *types.Var) bool {
		ptr, ok := types.Unalias(v.Type()).(*types.Pointer)
		if !ok {
			return false
		}
		named, ok := types.Unalias(ptr.Elem()).(*types.Named)
		if !ok || named.Obj().Name() != fact.Wrapper || named.Obj().Pkg() == nil || named.Obj().Pkg().Path() != fn.Pkg().Path() {
			return false
		}
		found = v
		return true
	})
	return found
}

// wrapperInScope finds a variable of type *Idempotent (fn's package's
// wrapper type, with a method for fn) visible at pos, innermost first.
func wrapperInScope(pass *analysis.Pass, pos token.Pos, fn *types.Func) *types.Var {
	var found *types.Var
	eachVar(pass, pos, func(v *types.Var) bool {
		ptr, ok := types.Unalias(v.Type()).(*types.Pointer)
		if !ok {
			return false
		}
		named, ok := types.Unalias(ptr.Elem()).(*types.Named)
		if !ok || named.Obj().Name() != "Idempotent" || named.Obj().Pkg() == nil || named.Obj().Pkg().Path() != fn.Pkg().Path() {
			return false
		}
		m, _, _ := types.LookupFieldOrMethod(ptr, false, named.Obj().Pkg(), fn.Name())
		if _, isFunc := m.(*types.Func); !isFunc {
			return false
		}
		found = v
		return true
	})
	return found
}

// eachVar calls f with the variables visible at pos, innermost scope
// first, declared before pos, up to and including the package scope,
// until f returns true.
func eachVar(pass *analysis.Pass, pos token.Pos, f func(*types.Var) bool) {
	for s := pass.Pkg.Scope().Innermost(pos); s != nil && s != types.Universe; s = s.Parent() {
		names := s.Names()
		for _, n := range names {
			v, ok := s.Lookup(n).(*types.Var)
			if !ok || n == "_" {
				continue
			}
			if s != pass.Pkg.Scope() && v.Pos() >= pos {
				continue // declared after the call
			}
			if f(v) {
				return
			}
		}
	}
}

// checkContext reports a wrapper call given context.Background() or
// context.TODO() where the enclosing function has a context of its own.
func checkContext(pass *analysis.Pass, call *ast.CallExpr, local map[*types.Func]*annotated) {
	fn, _ := typeutil.Callee(pass.TypesInfo, call).(*types.Func)
	if fn == nil || !isWrapper(pass, fn, local) {
		return
	}
	for _, arg := range call.Args {
		inner, ok := ast.Unparen(arg).(*ast.CallExpr)
		if !ok || len(inner.Args) != 0 {
			continue
		}
		fresh, _ := typeutil.Callee(pass.TypesInfo, inner).(*types.Func)
		if fresh == nil || fresh.Pkg() == nil || fresh.Pkg().Path() != "context" || (fresh.Name() != "Background" && fresh.Name() != "TODO") {
			continue
		}
		var ctx *types.Var
		eachVar(pass, call.Pos(), func(v *types.Var) bool {
			if v.Parent() == pass.Pkg.Scope() || !isContext(v.Type()) {
				return false // a package-level context is not the caller's
			}
			ctx = v
			return true
		})
		if ctx == nil {
			continue
		}
		pass.Report(analysis.Diagnostic{
			Pos:     arg.Pos(),
			End:     arg.End(),
			Message: fmt.Sprintf("wrapper %s called with context.%s() although %s (a context.Context) is in scope: the call would not stop when its caller is cancelled", fn.Name(), fresh.Name(), ctx.Name()),
			SuggestedFixes: []analysis.SuggestedFix{{
				Message:   "pass " + ctx.Name(),
				TextEdits: []analysis.TextEdit{{Pos: arg.Pos(), End: arg.End(), NewText: []byte(ctx.Name())}},
			}},
		})
	}
}

// isGenericWrapper reports whether fn is the generated wrapper of an
// annotated generic function: IdempotentPublish, a generic function of
// the package whose generic function Publish (or publish) is annotated.
func isGenericWrapper(pass *analysis.Pass, fn *types.Func, local map[*types.Func]*annotated) bool {
	name, ok := strings.CutPrefix(fn.Name(), "Idempotent")
	if !ok || name == "" || fn.Signature().TypeParams().Len() == 0 {
		return false
	}
	for _, n := range []string{name, strings.ToLower(name[:1]) + name[1:]} {
		f, ok := fn.Pkg().Scope().Lookup(n).(*types.Func)
		if !ok || f.Signature().TypeParams().Len() == 0 {
			continue
		}
		if fact := local[f]; fact != nil {
			return fact.Wrapper == "Idempotent"
		}
		var fact annotated
		return f.Pkg() != pass.Pkg && pass.ImportObjectFact(f, &fact) && fact.Wrapper == "Idempotent"
	}
	return false
}

// isWrapper reports whether fn is the generated wrapper of an annotated
// function: method M of type Idempotent in a package whose function M is
// annotated, or method M of type IdempotentT whose T.M is.
func isWrapper(pass *analysis.Pass, fn *types.Func, local map[*types.Func]*annotated) bool {
	recv := recvNamed(fn)
	if fn.Pkg() == nil {
		return false
	}
	if recv == nil {
		return isGenericWrapper(pass, fn, local)
	}
	name, ok := strings.CutPrefix(recv.Obj().Name(), "Idempotent")
	if !ok {
		return false
	}
	var orig types.Object
	if name == "" {
		orig = fn.Pkg().Scope().Lookup(fn.Name())
	} else if tn, ok := fn.Pkg().Scope().Lookup(name).(*types.TypeName); ok {
		var t types.Type = types.NewPointer(tn.Type())
		if types.IsInterface(tn.Type()) {
			t = tn.Type() // a decorator's method wraps the interface's
		}
		orig, _, _ = types.LookupFieldOrMethod(t, false, fn.Pkg(), fn.Name())
	}
	f, ok := orig.(*types.Func)
	if !ok {
		return false
	}
	if fact := local[f]; fact != nil {
		return fact.Wrapper == recv.Obj().Name()
	}
	var fact annotated
	return f.Pkg() != pass.Pkg && pass.ImportObjectFact(f, &fact) && fact.Wrapper == recv.Obj().Name()
}
