package generator

import (
	"go/token"
	"go/types"
	"time"

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

// codecProblem is one thing of a result that cannot be stored, with the
// omit= path that lifts it.
type codecProblem struct {
	path, msg string
	// root is the path of the outermost other package's value the
	// problem is in, or of the outermost value of a recursive type it is
	// in; "" if none. Relative paths inside a helper start with "\x00".
	root string
	// cycle: the problem is inside a value of a recursive type, so an
	// omit= below root would meet it again one level deeper.
	cycle bool
}

// codecFacts are what storing a value finds: of a wrapper's results, of a
// codec helper's value (paths relative to it) or of a union's variant.
type codecFacts struct {
	problems []codecProblem
	// lossy are other packages' types whose unexported state is not
	// replayed; skipped the fields of other packages' structs that cannot
	// be stored and that their package keeps out of its JSON (json:"-").
	lossy, skipped map[string]bool
	// errs: a value of type error is stored (its type may not be).
	errs bool
	// unions are the interfaces stored as unions of their package's types.
	unions map[string]bool
}

// options are the parsed options of one function's directives.
type options struct {
	pos         token.Position // the first //idem: line
	ttl, lease  time.Duration
	wait        time.Duration
	onDuplicate string // "" means return
	onFailure   string // "" means unlock
	key         []pathOpt
	keySet      bool
	exclude     []pathOpt
	omit        []pathOpt // results or paths inside results left out of the record
	name        string
	as          string // the wrapper's Go name, for another package's function
	version     int
	// order=ENTITY:TIME: the entity path and the event time path of an
	// ordered function (orderSet), and grace= its tolerance.
	orderEntity pathOpt
	orderTime   pathOpt
	orderSet    bool
	grace       time.Duration
	maxResult   int               // bytes; 0: the Guard's budget
	given       map[string]option // by option name, for positions
	order       []string          // option names as written, for the doc comment
}

type option struct {
	name, value string
	pos         token.Position // of the name
	valPos      token.Position // of the value
}

// pathOpt is one comma-separated element of key= or exclude=.
type pathOpt struct {
	text string
	pos  token.Position
}

// driftFacts are the types whose definitions the generated code relies
// on: the structs whose fields it reads and the types whose
// representation it converts. The drift checks pin them (checkDecls).
// The analysis decides them before anything is written: the key paths'
// structs from the plan (pathDrift), the others by walking what the key
// and codec code will reach (fileDrift).
type driftFacts struct {
	// fields are the struct types whose fields the code reads: each gets
	// a compile-time check that they did not change.
	fields map[*types.TypeName]*types.Named
	// instances are the instances of generic struct types whose fields
	// the code reads, by instanceKey: each has fields of its own.
	instances map[string]*types.Named
	// generic are the instances that mention a type parameter of the
	// function whose code reads them (Page[S] in Save[S]), in the order
	// first read: they can be named only inside a generic function, with
	// that function's type parameters.
	generic []genericRead
	// pinned are the named types and aliases whose representation the
	// code converts.
	pinned map[*types.TypeName]types.Type
	// sealed: rendering has begun, which reads the facts and notes none
	// (seal).
	sealed bool
}

type genericRead struct {
	x *fn
	n *types.Named
}

// helperPlan is what the plan says of one helper of the file.
type helperPlan struct {
	// Kind is "key", "payload" (a key helper for the payload fingerprint
	// under key=, lenient where the strict one fails) or "codec".
	Kind string
	// Type is the helper's type, as the codec helpers key it (an
	// instance with its type arguments; a codec helper specialised by
	// omit= says for which function and what it omits).
	Type string
	// Recursive: the type reaches itself, so the helper bounds the depth.
	Recursive bool
	// Failed: the type cannot be keyed or stored; no helper is written,
	// and the wrappers that reach it are refused.
	Failed bool
	// Name is the helper's function, "" when it fails: idemKeyT for a
	// key helper, idemEncT for a codec helper (whose decoder is idemDecT).
	Name string
	// Problems are why a key helper fails, as "path: reason" (paths
	// below the helper's value, "" for the value itself); Skipped the
	// paths a written key helper leaves out, with why. Both are what the
	// wrappers that reach the type report and say on their doc lines.
	Problems, Skipped []string
}

// keyFacts are the analysis's facts of one key helper: the problems of a
// type that cannot be keyed, or the paths a written helper leaves out as
// no part of a call's identity; paths below root.
type keyFacts struct {
	typ      string // as helperPlan.Type
	problems []problem
	skipped  []string
}

// keyWalk is what a key walk records at the value it is at: the paths it
// refuses (problems) and leaves out (skipped), and where exclude= could
// lift a refusal.
type keyWalk struct {
	// problems are the unkeyable paths found so far: the walk goes on
	// past them so one run reports every one.
	problems []problem
	// skipped are the fields left out as no part of a call's identity
	// (contexts), with why: "req.Params.Context (a context)".
	skipped []string
	// exPath is the longest prefix of the current path that exclude= can
	// name (paths go through struct fields and pointers, not through
	// slices, maps or unexported fields of other packages); noAdvice is set
	// for key= and order= paths, which exclude= cannot lift.
	exPath   string
	noAdvice bool
}

// keyPath is a resolved key= or exclude= path: a parameter, then fields.
type keyPath struct {
	opt    pathOpt
	param  int
	fields []string
	typ    types.Type // of the last element
	// nilable[i] says the value before fields[i] is a pointer that must be
	// checked for nil before the field is read.
	nilable []bool
	// structs are the types whose fields the path reads, in order.
	structs []types.Type
	// recvField is the wrapper's field holding the receiver (T, read as
	// recvVar.T) for a path that starts at the receiver (key=s.TenantID);
	// "" for a parameter's.
	recvField string
}

// exclusions are a function's resolved exclude= paths: whole parameters,
// and trees of the fields left out below the others.
type exclusions struct {
	whole map[int]bool
	trees map[int]exTree
	paths []keyPath
}

// omitTree is the omit= paths below one value: a leaf (empty, non-nil)
// leaves the value out.
type omitTree map[string]omitTree

// exTree is the set of excluded field paths below one value: the fields
// listed are skipped (leaf) or expanded (inner node).
type exTree map[string]exTree

// streamKind is how the wrapper reads a stream's items.
type streamKind int

const (
	streamSeq2   streamKind = iota + 1 // iter.Seq2[T, error]: range, an error ends it
	streamSeq                          // iter.Seq[T] or <-chan T: range to its end
	streamSDK                          // Next, Current, Err, Close (ssestream.Stream[T])
	streamReader                       // io.Reader or io.ReadCloser: []byte chunks
)

// stream is a streamed result: its kind and its item type.
type stream struct {
	kind streamKind
	item types.Type
	of   types.Type // the function's result
}

// helperKey names a key helper: of a type, for a key (strict: every
// field that holds data is keyed or refused) or for a payload fingerprint
// under key= (lenient: another package's unexported fields are skipped).
type helperKey struct {
	obj     *types.TypeName
	lenient bool
	// inst tells instances of one generic type apart (instanceKey).
	inst string
}

// problem is one path the key code cannot read.
type problem struct {
	path   string
	reason string // what is wrong, naming the type: problems group by it
	hint   string // what else would fix it, if anything
	// exclude is the longest prefix of path that exclude= can name, ""
	// when no option lifts the problem (a key= or order= path).
	exclude string
	// root is the exclude= path of the outermost value of a recursive
	// type the problem is in ("" if none, or if exclude= cannot name it);
	// inside a helper it starts with root. (Not another package's value,
	// as for results: that would drop identity, such as an SDK's
	// IdempotencyKey, along with the refused fields.)
	root string
	// cycle: the problem is inside a value of a recursive type, so an
	// exclude= below root would meet it again one level deeper.
	cycle bool
	// idemKey is the path of the SDK's own idempotency key field next to
	// the refused field (an IdempotencyKey in the same struct), "" if
	// none: excluding the struct would drop it, so the advice keys on it.
	idemKey string
}

// root stands for the path of the value a helper is written for; the
// caller substitutes it (a helper is written once, reached from many paths).
const root = "\x00"
