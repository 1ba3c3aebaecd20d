// Package generator is the engine of idemgen: it loads Go packages, finds
// functions and methods annotated with //idem: directives, checks them, and
// writes the typed wrappers (idem_gen.go) that run each function at most
// once per key through the runtime in github.com/idemgen/idemgen/runtime/idem.
//
// It is a library so tools and tests can run it in-process:
//
//	files, err := generator.Generate(generator.Config{Dir: ".", Patterns: []string{"./..."}})
//	var gerr *generator.Error
//	if errors.As(err, &gerr) { for _, d := range gerr.Diagnostics { fmt.Println(d) } }
//
// Generate writes nothing; the caller decides (cmd/idemgen writes files
// whose bytes changed, or diffs them with -check).
//
// The files read downward, each using only files below it: generator.go
// runs the phases; render_*.go (with emitter.go, its state) write the
// file from the plan and call verify_*.go to type-check it; analyze_*.go
// build the plan (plan.go, plain data) from the loaded package
// (pkginfo.go); shape.go, wellknown.go, stdlib.go, diag.go and
// generator_config.go are the ground. TestFilesReadDownward holds it.
package generator

import (
	"bytes"
	"fmt"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

// DefaultOutput is the name of the generated file in each package.
const DefaultOutput = "idem_gen.go"

// File is the generated file of one package.
type File struct {
	// PkgPath is the package's import path.
	PkgPath string
	// Path is the absolute path of the file.
	Path string
	// Content is the gofmt'd source, or nil when the package has no
	// annotated functions (an existing generated file is then stale).
	Content []byte
}

// Generate loads the packages and returns the generated file of each. On
// any diagnostic it returns an *Error listing all of them, sorted, with
// positions relative to Dir; files of packages without problems are still
// returned.
func Generate(cfg Config) ([]File, error) {
	if cfg.Dir == "" {
		cfg.Dir = "."
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	if len(cfg.Patterns) == 0 {
		cfg.Patterns = []string{"."}
	}
	if cfg.Output == "" {
		cfg.Output = DefaultOutput
	}
	if strings.ContainsAny(cfg.Output, `/\`) || !strings.HasSuffix(cfg.Output, ".go") || strings.HasSuffix(cfg.Output, "_test.go") {
		return nil, fmt.Errorf("idemgen: output %q must be a plain non-test .go file name", cfg.Output)
	}
	d := &diags{base: dir}
	fset := token.NewFileSet()
	pkgs, extra, err := load(dir, cfg, fset, d)
	if err != nil {
		return nil, err
	}
	std, err := newStdLib(dir, cfg.Env)
	if err != nil {
		return nil, err
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].PkgPath < pkgs[j].PkgPath })
	outputs := map[*packages.Package]string{}
	for _, p := range pkgs {
		if len(p.GoFiles) > 0 {
			outputs[p] = filepath.Join(filepath.Dir(p.GoFiles[0]), cfg.Output)
		}
	}
	dupNames := checkNames(pkgs, fset, outputs, d)
	var files []File
	for _, p := range pkgs {
		if len(p.GoFiles) == 0 && len(p.Errors) > 0 {
			for _, e := range p.Errors {
				d.add(errPos(e), "%s", e.Msg)
			}
			continue
		}
		if len(p.GoFiles) == 0 {
			continue
		}
		out := filepath.Join(filepath.Dir(p.GoFiles[0]), cfg.Output)
		n := len(d.list)
		if !loadErrors(p, out, d) {
			continue
		}
		src := generatePackage(p, fset, out, std, d, extra)
		// A package with diagnostics gets no file, unless they are only
		// of functions the pre-write check refused: the rest is written.
		if (src == nil && len(d.list) > n) || dupNames[p] {
			continue
		}
		files = append(files, File{PkgPath: p.PkgPath, Path: out, Content: src})
	}
	return files, d.err()
}

// loadErrors reports the package's load and type errors, ignoring those in
// the generated file itself (it may be stale: that is why we run) and those
// about the generated API, which user code may use before it exists.
func loadErrors(p *packages.Package, out string, d *diags) bool {
	ok := true
	for _, e := range p.Errors {
		pos := errPos(e)
		if pos.Filename == out {
			continue
		}
		if e.Kind == packages.TypeError && strings.Contains(e.Msg, "Idempotent") {
			continue
		}
		d.add(pos, "%s", e.Msg)
		ok = false
	}
	return ok
}

// Stale reports whether the file on disk differs from f (missing counts).
func (f File) Stale() bool {
	old, err := os.ReadFile(f.Path)
	if f.Content == nil {
		return err == nil && bytes.HasPrefix(old, []byte(Header))
	}
	return err != nil || !bytes.Equal(old, f.Content)
}

// generatePackage returns the generated file of p, nil when p has no
// annotated functions or after a diagnostic: analyze, then render.
func generatePackage(p *packages.Package, fset *token.FileSet, out string, std *stdLib, d *diags, extra map[string]*types.Package) []byte {
	pi := &pkgInfo{pkg: p, fset: fset, out: out, scope: packageScope(p, fset, out), d: d, types: newWellKnown(p.Types), std: std, extra: extra}
	n := len(d.list)
	defer pi.account(n)
	fp := pi.analyze()
	if fp == nil {
		return nil
	}
	if editPlan != nil {
		editPlan(fp)
	}
	return pi.render(fp, n)
}
