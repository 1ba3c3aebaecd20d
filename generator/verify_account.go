package generator

import (
	"go/ast"
	"go/token"
	"sort"
)

// Every annotation is accounted for: each //idem: line the loader finds
// ends in a wrapper (a function under it whose wrapper was written) or in
// a diagnostic about it (positioned from the line to the end of the
// declaration it annotates). One that ends in neither was dropped
// silently, which is a defect of the generator: in a package without any
// other diagnostic (where every annotation must end wrapped) it is
// reported as one, and tests assert that no annotation of the golden and
// diagnostics corpora or of random packages is ever left unaccounted.

// dropWrapper, set only by tests, makes the emitter drop the wrapper of
// the functions it returns true for without a word: the silent skip
// accounting must catch.
var dropWrapper func(x *fn) bool

// helpersWritten, set only by tests, receives the helpers the writers
// decided for each file they wrote: the plan's (fp.Helpers) must be
// them.
var helpersWritten func(fp *filePlan, written []helperPlan)

// editPlan, set only by tests, edits a file's plan before render reads
// it: a plan render disagrees with, which it must report, not follow.
var editPlan func(fp *filePlan)

// accountHook, set only by tests, receives each package's unaccounted
// directive lines.
var accountHook func(pkg string, unaccounted []token.Position)

// account checks the annotations of the package; since is the number of
// diagnostics before the package was analysed.
func (pi *pkgInfo) account(since int) {
	left := pi.unaccounted(since)
	if accountHook != nil {
		accountHook(pi.pkg.PkgPath, left)
	}
	if len(pi.d.list) > since {
		return // another diagnostic left the file out: the test hook judges
	}
	for _, at := range left {
		pi.d.add(at, "//idem: annotates something that was neither wrapped nor refused: an idemgen defect; please report it")
	}
}

// unaccounted returns the directive lines with no outcome.
func (pi *pkgInfo) unaccounted(since int) []token.Position {
	var left []token.Position
	for _, f := range pi.pkg.Syntax {
		if pi.fset.Position(f.Pos()).Filename == pi.out {
			continue
		}
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				if !isDirective(c) && !isMangledDirective(c) {
					continue
				}
				n := annotated(f, c)
				from, to := pi.fset.Position(min(c.Slash, n.Pos())), pi.fset.Position(n.End())
				if !pi.outcome(from, to, since) {
					left = append(left, from)
				}
			}
		}
	}
	return left
}

// annotated is the declaration a directive line is in or above, or the
// line itself when nothing follows it.
func annotated(f *ast.File, c *ast.Comment) ast.Node {
	i := sort.Search(len(f.Decls), func(i int) bool { return f.Decls[i].End() >= c.Pos() })
	if i < len(f.Decls) {
		return f.Decls[i]
	}
	return c
}

// outcome reports whether a wrapper was written for a function annotated
// between from and to, or a diagnostic since points there.
func (pi *pkgInfo) outcome(from, to token.Position, since int) bool {
	in := func(p token.Position) bool {
		return p.Filename == from.Filename && !before(p, from) && !before(to, p)
	}
	for x := range pi.emitted {
		if in(pi.fset.Position(x.pos)) {
			return true
		}
	}
	for _, p := range pi.d.at[since:] {
		if in(p) {
			return true
		}
	}
	return false
}

func before(a, b token.Position) bool {
	return a.Line < b.Line || a.Line == b.Line && a.Column < b.Column
}
