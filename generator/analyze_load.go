package generator

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/tools/go/packages"
)

// load lists the packages matching cfg.Patterns and type-checks those that
// need generating, cheaply:
//
//   - a listing first (no compiling): only packages with a directive, or
//     with a generated file that may now be stale, go further, so
//     idemgen ./... on a large module stays fast;
//   - their dependencies come from export data (compiled once, then cached
//     by the go command);
//   - the packages themselves are parsed and type-checked here, without
//     their generated file (it may be the stale thing being fixed) and
//     without function bodies (only declarations matter to the generator).
//     go/packages would compile them for export data too, which for a
//     large package costs as much as a build.
//
// The dependency load also brings the packages the generated code imports
// on its own (the runtime, and the standard packages the emitter names),
// which the pre-write check (verify_precheck.go) type-checks the output against;
// they come back by path.
func load(dir string, cfg Config, fset *token.FileSet, d *diags) ([]*packages.Package, map[string]*types.Package, error) {
	listed, err := packages.Load(&packages.Config{
		Mode:       packages.NeedName | packages.NeedFiles | packages.NeedImports,
		Dir:        dir,
		BuildFlags: cfg.BuildFlags,
		Env:        cfg.Env,
	}, cfg.Patterns...)
	if err != nil {
		return nil, nil, fmt.Errorf("idemgen: listing packages: %w", err)
	}
	var roots []*packages.Package
	depSet := map[string]bool{}
	for _, p := range listed {
		if len(p.GoFiles) == 0 {
			for _, e := range p.Errors {
				d.add(errPos(e), "%s", e.Msg)
			}
			continue
		}
		if !mentionsDirective(p.GoFiles) && !fileExists(filepath.Join(filepath.Dir(p.GoFiles[0]), cfg.Output)) {
			continue
		}
		roots = append(roots, p)
		for _, imp := range p.Imports {
			if imp.ID != "unsafe" && imp.ID != "C" {
				depSet[imp.ID] = true
			}
		}
	}
	sort.Slice(roots, func(i, j int) bool { return roots[i].PkgPath < roots[j].PkgPath })
	deps := map[string]*types.Package{}
	extra := map[string]*types.Package{}
	if len(roots) > 0 {
		for _, path := range outputImports {
			depSet[path] = true
		}
		ids := make([]string, 0, len(depSet))
		for id := range depSet {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		loaded, err := packages.Load(&packages.Config{
			Mode:       packages.NeedName | packages.NeedTypes,
			Dir:        dir,
			BuildFlags: cfg.BuildFlags,
			Env:        cfg.Env,
		}, ids...)
		if err != nil {
			return nil, nil, fmt.Errorf("idemgen: loading dependencies: %w", err)
		}
		for _, p := range loaded {
			if p.Types != nil {
				deps[p.ID] = p.Types
				extra[p.PkgPath] = p.Types
			}
		}
	}
	for _, p := range roots {
		check(p, fset, filepath.Join(filepath.Dir(p.GoFiles[0]), cfg.Output), deps)
	}
	return roots, extra, nil
}

// outputImports are the packages generated code may import whatever the
// package imports: the runtime, and the standard packages the emitter
// names itself. Listed with the dependencies (one go list), they cost
// nothing when cached.
var outputImports = []string{RuntimePath, RuntimeImplPath, "context", "errors", "maps", "net/url", "reflect", "slices", "time"}

// check parses and type-checks p's files, except the generated one, into p.
func check(p *packages.Package, fset *token.FileSet, out string, deps map[string]*types.Package) {
	p.Errors = nil
	var files []*ast.File
	for _, name := range p.GoFiles {
		if name == out {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments|parser.SkipObjectResolution)
		if list, ok := err.(scanner.ErrorList); ok {
			for _, e := range list {
				p.Errors = append(p.Errors, packages.Error{Pos: e.Pos.String(), Msg: e.Msg, Kind: packages.ParseError})
			}
		} else if err != nil {
			p.Errors = append(p.Errors, packages.Error{Pos: name, Msg: err.Error(), Kind: packages.ParseError})
		}
		if f != nil {
			files = append(files, f)
		}
	}
	p.Syntax = files
	p.TypesInfo = &types.Info{
		Types:      map[ast.Expr]types.TypeAndValue{},
		Defs:       map[*ast.Ident]types.Object{},
		Uses:       map[*ast.Ident]types.Object{},
		Implicits:  map[ast.Node]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
		Scopes:     map[ast.Node]*types.Scope{},
	}
	conf := types.Config{
		Importer: importerFunc(func(path string) (*types.Package, error) {
			if path == "unsafe" {
				return types.Unsafe, nil
			}
			if imp := p.Imports[path]; imp != nil {
				if t := deps[imp.ID]; t != nil {
					return t, nil
				}
			}
			return nil, fmt.Errorf("could not import %s", path)
		}),
		IgnoreFuncBodies: true,
		FakeImportC:      true,
		Sizes:            types.SizesFor("gc", runtime.GOARCH),
		Error: func(err error) {
			if te, ok := err.(types.Error); ok {
				p.Errors = append(p.Errors, packages.Error{Pos: te.Fset.Position(te.Pos).String(), Msg: te.Msg, Kind: packages.TypeError})
			}
		},
	}
	p.Types, _ = conf.Check(p.PkgPath, fset, files, p.TypesInfo)
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

func mentionsDirective(files []string) bool {
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil || bytes.Contains(data, []byte(directivePrefix)) || bytes.Contains(data, []byte("// idem:")) {
			return true // unreadable: let the full load report it
		}
	}
	return false
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// errPos parses the "file:line:col" of a packages.Error.
func errPos(e packages.Error) token.Position {
	s := e.Pos
	var pos token.Position
	for i := 0; i < 2; i++ {
		j := strings.LastIndexByte(s, ':')
		if j < 0 {
			break
		}
		n, err := strconv.Atoi(s[j+1:])
		if err != nil {
			break
		}
		pos.Column, pos.Line = pos.Line, n
		s = s[:j]
	}
	if pos.Column == 0 && pos.Line != 0 {
		pos.Column = 1
	}
	if s != "" && s != "-" {
		pos.Filename = s
	}
	return pos
}
