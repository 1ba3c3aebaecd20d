package generator

import (
	"go/types"

	"golang.org/x/tools/go/types/typeutil"
)

// The plan: what the analysis decides about a package's generated file,
// as plain data. Analyze (analyze_plan.go) builds it from the loaded
// package, once, before anything is rendered; render (render_*.go) writes
// the file from it. Tests assert on it (plan_test.go).

// filePlan is the plan of one package's generated file.
type filePlan struct {
	// Package is the package's import path.
	Package string
	// Funcs are the annotated functions and steps, in the order collect
	// found them (wrappers first, then steps).
	Funcs []*funcPlan
	// Helpers are the key and codec helpers of the file's named types,
	// each decided once: written, recursive or failed (analyze_helpers.go).
	// They are of the functions written (decide).
	Helpers []helperPlan

	// fns are the wrapped functions (steps are pi.steps); since counts
	// the diagnostics before the plan's (collect's stop no file).
	fns   []*fn
	since int
	// drift are the types the file's code relies on, which its drift
	// checks pin; errPkgs the packages whose error types its idemErrors
	// restores. Both are of the functions written (decide).
	drift   *driftFacts
	errPkgs []*types.Package
	// keyFacts are what each key helper of Helpers refuses or leaves out,
	// which render reads: it writes only the helpers that can be.
	keyFacts map[helperKey]*keyFacts
	// codecFacts are what each codec helper of Helpers stores, or why it
	// cannot (paths relative to its value); variants the variants of each
	// union its codecs store (by types.TypeString); errTypes the known
	// error types idemErrors restores as themselves. Render writes from
	// them (analyze_codecfacts.go).
	codecFacts map[string]*codecFacts
	variants   map[*types.Named]map[string]bool
	errTypes   map[*types.TypeName]bool
	// keyTries say whether a value the key writer writes only where it
	// can be keyed (a union's variant, a zero-size field) can be, by the
	// writer's mode and the value's type (bool values): render writes
	// those and leaves the others out without trying them.
	keyTries map[keyMode]*typeutil.Map
}

// keyMode is how the key writer writes a value. lenient: the payload
// fingerprint under key=, which leaves out an SDK's unexported state and
// type parameters it cannot key; payload: its helpers are the payload's.
// The two differ only for a zero-size field, which is tried strictly.
type keyMode struct{ lenient, payload bool }

// keyTried reports whether the analysis found that a value of t written
// in mode m can be keyed.
func (fp *filePlan) keyTried(t types.Type, m keyMode) bool {
	ok, _ := fp.keyTries[m].At(t).(bool) // a nil Map holds nothing
	return ok
}

// funcPlan is the plan of one annotated function: its names, the paths of
// its key, payload, order and omitted results as resolved against its
// parameters and results, its doc line, and the diagnostics the analysis
// reported about it.
type funcPlan struct {
	// Display names the function in comments: pkg.F, T.M (pkg.T.M for
	// another package's method).
	Display string
	// Spec is the stored name (Spec.Name): the import path and the name,
	// or name=.
	Spec string
	// Step: the function is a step (//idem:step), wrapped as FStep.
	Step bool
	// DocLine is the directive as it takes effect, which the wrapper's
	// doc comment quotes: "ttl=24h lease=30s on_duplicate=return".
	DocLine string
	// Key are the key= paths as the generated code reads them (promoted
	// fields through their embeddings); empty for the default key.
	Key []string
	// Exclude are the exclude= paths the default key leaves out (a path
	// under another excluded one is dropped).
	Exclude []string
	// OrderEntity and OrderTime are order='s paths, "" without order=.
	OrderEntity, OrderTime string
	// Omit are the omit= paths the doc line names (those no other one
	// covers); Results the fields of the result struct (several results).
	Omit, Results []string
	// Reads are the struct types whose fields the key= and order= paths
	// read on their way (pkg.T, pkg.T[int] for an instance), in path
	// order: the drift checks pin their field lists.
	Reads []string
	// Diagnostics are what the analysis of this function reported.
	Diagnostics []string

	// resolved are the same paths with their types, for render.
	resolved resolvedPaths
	// codec is what the result codec stores and why it cannot; nil when
	// the analysis refused the results before (type parameters, omit=).
	codec *codecFacts
	// keys are what the key walk refuses and leaves out where the wrapper
	// writes key material.
	keys keySites
}

// keySites are what the key walk refuses and leaves out at each place a
// wrapper writes key material, as the writer words it: each parameter of
// the default key (params) or of the payload under key= (payload), by
// parameter index; each key= path (paths, in order); order='s entity.
// nil where nothing is written there.
type keySites struct {
	params, payload, paths []*keyWalk
	entity                 *keyWalk
}

// resolvedPaths are a function's directive paths resolved against its
// types: what render writes the key, the order and the codec from.
type resolvedPaths struct {
	ex       exclusions
	keyPaths []keyPath
	// keysOK: exclude= and key= resolved without a diagnostic.
	keysOK bool
	// ent and at are order='s entity and time; entOK and atOK say each
	// resolved (and that at is a time).
	ent, at     keyPath
	entOK, atOK bool
	// omits are the omit= trees per result, omitted the paths the doc
	// line names; omitOK: omit= resolved without a diagnostic.
	omits   []omitTree
	omitted []string
	omitOK  bool
	// reads are the struct types Reads names.
	reads []*types.Named
}

// helper is the plan of typ's helper of the given Kind (as helperPlan names
// them); the zero plan if the analysis decided none.
func (fp *filePlan) helper(of, typ string) helperPlan {
	for _, h := range fp.Helpers {
		if h.Kind == of && h.Type == typ {
			return h
		}
	}
	return helperPlan{}
}
