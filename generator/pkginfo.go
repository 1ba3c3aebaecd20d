package generator

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/packages"
)

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

// typeString prints t qualified relative to the package being generated.
func (pi *pkgInfo) typeString(t types.Type) string {
	return types.TypeString(t, func(p *types.Package) string {
		if p == pi.pkg.Types {
			return ""
		}
		return p.Name()
	})
}

func upperFirst(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
