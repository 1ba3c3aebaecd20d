package generator

import (
	"maps"
	"slices"
	"strings"
)

// What storing a result finds is decided by the analysis walk
// (reach.store, analyze_reach.go), before anything is written: the
// problems that refuse a wrapper, and what its doc line says the record
// leaves out or restores only in part. Render reads these facts from the
// plan (funcPlan.codec, filePlan.codecFacts, .variants, .errTypes) and
// writes code for what can be stored; it walks no type for its problems.

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

func newCodecFacts() *codecFacts {
	return &codecFacts{lossy: map[string]bool{}, skipped: map[string]bool{}}
}

func (f *codecFacts) fail(path, msg, root string) {
	f.add(codecProblem{path: path, msg: msg, root: root})
}

func (f *codecFacts) add(p codecProblem) {
	if !slices.Contains(f.problems, p) {
		f.problems = append(f.problems, p)
	}
}

// absorb takes in what a helper or a union's variant stores.
func (f *codecFacts) absorb(o *codecFacts) {
	for l := range o.lossy {
		f.lossy[l] = true
	}
	for s := range o.skipped {
		f.skipped[s] = true
	}
	f.errs = f.errs || o.errs
	for u := range o.unions {
		f.addUnion(u)
	}
}

func (f *codecFacts) addUnion(u string) {
	if f.unions == nil {
		f.unions = map[string]bool{}
	}
	f.unions[u] = true
}

// lift records the problems of helper h (recursive: its type reaches
// itself), reached at path, as problems here. Their root is the outermost
// other package's value (foreignAt), else the root they had inside the
// helper, else this value when its type is recursive: advice must name a
// value the recursion cannot reach past.
func (f *codecFacts) lift(h *codecFacts, recursive bool, path, foreignAt string) {
	for _, p := range h.problems {
		q := codecProblem{path: relJoin(path, p.path), msg: p.msg, cycle: p.cycle || recursive}
		switch {
		case foreignAt != "":
			q.root = foreignAt
		case strings.HasPrefix(p.root, "\x00"):
			q.root = relJoin(path, p.root[1:])
		case p.root != "":
			q.root = relJoin(path, p.root)
		case recursive:
			q.root = path
		}
		f.add(q)
	}
}

// problemLines are f's problems as helperPlan.Problems shows them: "path:
// reason", a helper's paths below its value (".Data", "" for the value).
func (f *codecFacts) problemLines() []string {
	var out []string
	for _, p := range f.problems {
		path := p.path
		if path != "" && !strings.HasPrefix(path, "[") {
			path = "." + path
		}
		out = append(out, path+": "+p.msg)
	}
	return out
}

// sorted are the keys of a set, sorted.
func sorted(set map[string]bool) []string { return slices.Sorted(maps.Keys(set)) }

// recordDoc is what a wrapper's doc comment says about its record: what
// it leaves out (omitted, by omit=) and how errors and unions replay;
// errTypes names the file's idemErrors.
func (f *codecFacts) recordDoc(omitted []string, errTypes string) string {
	var doc string
	if len(omitted) > 0 {
		doc += " Not stored (replays return their zero value): " + strings.Join(omitted, ", ") + "."
	}
	if len(f.lossy) > 0 {
		doc += " Replays do not restore the unexported state of " + strings.Join(sorted(f.lossy), ", ") + "."
	}
	if len(f.skipped) > 0 {
		doc += " Not stored (tagged json:\"-\" by their package): " + strings.Join(sorted(f.skipped), ", ") + "."
	}
	if len(f.unions) > 0 {
		doc += " Values of " + strings.Join(sorted(f.unions), ", ") + " are stored for the types of their package that their codec lists; others fail the recording."
	}
	if f.errs {
		doc += " Errors in results replay as their text and chain, as themselves if " + errTypes + " lists them."
	}
	return doc
}

// relJoin puts a path relative to a helper's value after path.
func relJoin(path, rel string) string {
	switch {
	case rel == "":
		return path
	case path == "" || strings.HasPrefix(rel, "["):
		return path + rel
	}
	return path + "." + rel
}
