package generator

import (
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Checked is one package that someone else has already parsed and
// type-checked: an analysis pass (go vet, gopls) or any other loader. It is
// the second front end of the engine, beside Generate's own loader; both
// hand the package to the same analysis and emitter, so what
// GenerateChecked returns is byte for byte what Generate would write.
type Checked struct {
	Fset *token.FileSet
	// Files are the package's files. Test files (_test.go) and the
	// generated file itself are skipped: the generator never sees them.
	Files []*ast.File
	Types *types.Package
	Info  *types.Info
	// Output is the absolute path of the generated file (the directory of
	// the package's files joined with DefaultOutput, say).
	Output string
}

// GenerateChecked runs the engine on one type-checked package. content is
// nil when the package has no annotated functions, or when a diagnostic
// was reported (then problems lists them all, in position order, with
// absolute file names).
//
// The package may have been type-checked with its generated file and its
// test files (go vet type-checks the test variant of a package): the
// generator only reads declarations of the other files, and it sees the
// package-level names of those files only, as its loader does.
func GenerateChecked(c Checked) (content []byte, problems []Diagnostic) {
	p := &packages.Package{
		ID:        c.Types.Path(),
		Name:      c.Types.Name(),
		PkgPath:   c.Types.Path(),
		Types:     c.Types,
		TypesInfo: c.Info,
	}
	for _, f := range c.Files {
		name := c.Fset.Position(f.Pos()).Filename
		if name == c.Output || strings.HasSuffix(name, "_test.go") {
			continue
		}
		p.GoFiles = append(p.GoFiles, name)
		p.Syntax = append(p.Syntax, f)
	}
	if len(p.Syntax) == 0 {
		return nil, nil
	}
	d := &diags{}
	std, err := newStdLib(filepath.Dir(c.Output), nil)
	if err != nil {
		return nil, []Diagnostic{{Pos: token.Position{Filename: c.Output}, Msg: err.Error()}}
	}
	// Only this package's names can be compared here; Generate compares
	// those of every package of its run.
	dupNames := checkNames([]*packages.Package{p}, c.Fset, map[*packages.Package]string{p: c.Output}, d)
	content = generatePackage(p, c.Fset, c.Output, std, d, nil)
	if dupNames[p] {
		content = nil
	}
	if err, ok := d.err().(*Error); ok {
		return nil, err.Diagnostics
	}
	return content, nil
}
