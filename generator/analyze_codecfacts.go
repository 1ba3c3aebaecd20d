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
