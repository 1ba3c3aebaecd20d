package generator

import (
	"go/types"

	"github.com/dave/jennifer/jen"
)

// emitter builds the generated file of one package from its plan: the
// file writer (its imports, names and compile-time checks, render code
// that needs only the file is fileWriter's), the key and codec helpers
// written so far, and the declarations besides the wrappers. Which
// helpers are written, fail or recurse the plan decided (fp.Helpers), and
// the analysis's drift facts are only read (checkDecls).
type emitter struct {
	*fileWriter
	keyHelpers
	fileOut
	// codecWritten are the codec helpers written so far (by
	// codecHelperKey); which are written the plan decided.
	codecWritten map[string]bool
	// plan is the file's: its helpers and the packages whose error
	// types idemErrors restores.
	plan *filePlan
}

// The packages the generated code names besides the user's.
var (
	idemPkg    = types.NewPackage(RuntimePath, "idem")
	implPkg    = types.NewPackage(RuntimeImplPath, "idemimpl")
	contextPkg = types.NewPackage("context", "context")
)

// keyHelpers are the key helpers written so far; which are written and
// their names the plan decided (fp.keyFacts, fp.Helpers).
type keyHelpers struct {
	keysWritten map[helperKey]bool
}

// fileOut is what the file holds besides the wrappers, written so far.
type fileOut struct {
	helperDecls []helperDecl
	// errs are the file's idemErrors, once a result holds an error value
	// (errorTypes).
	errs *errTypes
}

type helperDecl struct {
	name string
	code jen.Code
}

// helperNames are the names of a wrapper's helpers on the wrapper type.
type helperNames struct {
	begin string // starts the call and writes its key material
	key   string // the exported Key helper: the store key of a call
	// wrapper is a generic function's package-level wrapper, "" for a
	// method of the wrapper type.
	wrapper string
}

// errTypes is the state of a file's idemErrors.
type errTypes struct {
	name   string // the type's name in the generated file
	encode []jen.Code
	decode []jen.Code
	usesX  bool
	// sentinels is the switch over the sentinel errors, nil if none.
	sentinels jen.Code
}
