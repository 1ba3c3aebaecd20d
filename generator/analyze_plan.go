package generator

import (
	"go/types"
	"slices"
	"strconv"
	"strings"
	"time"
)

// plan resolves the directives of fns and steps against their types and
// records what the file of the package will hold, before any of it is
// rendered. Each function's plan is set on it (x.plan); its diagnostics
// go to pi.d as well as onto the plan.
func (pi *pkgInfo) plan(fns, steps []*fn) *filePlan {
	fp := &filePlan{Package: pi.pkg.PkgPath}
	for _, x := range append(append([]*fn(nil), fns...), steps...) {
		n := len(pi.d.list)
		x.plan = pi.planFunc(x)
		for _, d := range pi.d.list[n:] {
			x.plan.Diagnostics = append(x.plan.Diagnostics, d.String())
		}
		fp.Funcs = append(fp.Funcs, x.plan)
	}
	return fp
}

// planFunc is the plan of one function.
func (pi *pkgInfo) planFunc(x *fn) *funcPlan {
	p := &funcPlan{Step: x.step, DocLine: optionSummary(x)}
	p.Display, p.Spec = pi.names(x)
	r := &p.resolved
	if !x.step {
		var exOK, keyOK bool
		r.ex, exOK = pi.resolveExcludes(x)
		r.keyPaths, keyOK = pi.resolveKeys(x, r.ex.paths)
		r.keysOK = exOK && keyOK
		r.ent, r.entOK, r.at, r.atOK = pi.resolveOrder(x)
	}
	if !x.step || len(x.result) == 1 {
		r.omits, r.omitted, r.omitOK = pi.omitTrees(x) // a step's codec: one result
	}
	for _, kp := range r.keyPaths {
		p.Key = append(p.Key, planPath(x, kp))
	}
	for _, kp := range r.ex.paths {
		p.Exclude = append(p.Exclude, planPath(x, kp))
	}
	if r.entOK {
		p.OrderEntity = planPath(x, r.ent)
	}
	if r.atOK {
		p.OrderTime = planPath(x, r.at)
	}
	p.Omit = r.omitted
	r.reads = pathReads(r)
	for _, n := range r.reads {
		p.Reads = append(p.Reads, types.TypeString(n, types.RelativeTo(pi.pkg.Types)))
	}
	if len(x.result) > 1 {
		x.resultFields = resultFields(x)
		p.Results = x.resultFields
	}
	return p
}

// pathReads are the struct types whose fields the key= and order= paths
// of r read, each once, in path order.
func pathReads(r *resolvedPaths) []*types.Named {
	paths := r.keyPaths
	if r.atOK {
		paths = append(paths[:len(paths):len(paths)], r.at)
	}
	if r.entOK {
		paths = append(paths[:len(paths):len(paths)], r.ent)
	}
	var reads []*types.Named
	for _, kp := range paths {
		for _, t := range kp.structs {
			if p, ok := types.Unalias(t).Underlying().(*types.Pointer); ok {
				t = p.Elem()
			}
			if n, ok := types.Unalias(t).(*types.Named); ok && !slices.Contains(reads, n) {
				reads = append(reads, n)
			}
		}
	}
	return reads
}

// names are the display name of x (pkg.F, T.M) and its stored name.
func (pi *pkgInfo) names(x *fn) (display, spec string) {
	display, spec = pi.pkg.Name+"."+x.name, pi.pkg.PkgPath+"."+x.name
	if x.recv != nil {
		display = x.recv.Name() + "." + x.name
		spec = pi.pkg.PkgPath + "." + x.recv.Name() + "." + x.name
	}
	if x.foreign {
		display, spec = foreignNames(x)
	}
	if x.opts.name != "" {
		spec = x.opts.name
	}
	return display, spec
}

// planPath is a resolved path as the plan shows it: canonical, the
// receiver by its name.
func planPath(x *fn, kp keyPath) string {
	c := kp.canon(x)
	if rest, ok := strings.CutPrefix(c, "\x00recv"); ok {
		return x.recvName + rest
	}
	return c
}

// optionSummary is the directive as it takes effect, for the doc comment.
func optionSummary(x *fn) string {
	o := x.opts
	dup := o.onDuplicate
	if dup == "" {
		dup = "return"
	}
	parts := []string{
		"ttl=" + shortDuration(or(o.ttl, 24*time.Hour)),
		"lease=" + shortDuration(or(o.lease, 30*time.Second)),
		"on_duplicate=" + dup,
	}
	if o.wait > 0 {
		parts = append(parts, "wait="+shortDuration(o.wait))
	}
	if o.onFailure != "" {
		parts = append(parts, "on_failure="+o.onFailure)
	}
	for _, n := range []string{"key", "exclude", "name", "version", "order", "grace", "omit", "max_result"} {
		if opt, ok := o.given[n]; ok {
			parts = append(parts, n+"="+opt.value)
		}
	}
	return strings.Join(parts, " ")
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// shortDuration prints 24h rather than 24h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// resolveOrder resolves order='s entity and time paths; the time must be
// a time.Time or a *time.Time.
func (pi *pkgInfo) resolveOrder(x *fn) (ent keyPath, entOK bool, at keyPath, atOK bool) {
	o := x.opts
	if !o.orderSet {
		return ent, false, at, false
	}
	ent, entOK = pi.resolve(x, o.orderEntity, "order")
	at, atOK = pi.resolve(x, o.orderTime, "order")
	if atOK {
		t := at.typ
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		if !isTime(t) {
			pi.d.add(o.orderTime.pos, "order: the time path %s has type %s; it must be time.Time or *time.Time", at.opt.text, pi.typeString(at.typ))
			atOK = false
		}
	}
	return ent, entOK, at, atOK
}

// resolveExcludes resolves exclude= first: it shapes the default key.
func (pi *pkgInfo) resolveExcludes(x *fn) (exclusions, bool) {
	ex := exclusions{whole: map[int]bool{}, trees: map[int]exTree{}}
	resolved, ok := pi.resolveAll(x, x.opts.exclude, "exclude")
	// A path under another excluded path is excluded already: following
	// two rounds of advice (req.Params.Context, then req.Params) must not
	// be an error.
	for i, kp := range resolved {
		if coveredByOther(i, len(resolved), func(j int) string { return resolved[j].canon(x) }) {
			continue
		}
		ex.paths = append(ex.paths, kp)
		if len(kp.fields) == 0 {
			ex.whole[kp.param] = true
			continue
		}
		ex.trees[kp.param] = growTree(ex.trees[kp.param], kp.fields)
	}
	return ex, ok
}

// resolveAll resolves the paths of one option; false after a diagnostic
// (the paths that resolved are returned still).
func (pi *pkgInfo) resolveAll(x *fn, paths []pathOpt, option string) ([]keyPath, bool) {
	ok := true
	var out []keyPath
	for _, p := range paths {
		kp, good := pi.resolve(x, p, option)
		if !good {
			ok = false
			continue
		}
		out = append(out, kp)
	}
	return out, ok
}

// growTree adds the path of field names to tree (a new tree when nil) and
// returns it.
func growTree[T ~map[string]T](tree T, path []string) T {
	if tree == nil {
		tree = T{}
	}
	t := tree
	for _, f := range path {
		if t[f] == nil {
			t[f] = T{}
		}
		t = t[f]
	}
	return tree
}

// resolveKeys resolves key=: paths listed once, none inside another or
// inside an excluded one.
func (pi *pkgInfo) resolveKeys(x *fn, exPaths []keyPath) ([]keyPath, bool) {
	resolved, ok := pi.resolveAll(x, x.opts.key, "key")
	var keyPaths []keyPath
	for _, kp := range resolved {
		p := kp.opt
		for _, q := range keyPaths {
			switch {
			case q.opt.text == p.text:
				pi.d.add(p.pos, "key: %s is listed twice", p.text)
				ok = false
			case covers(q.canon(x), kp.canon(x)) || covers(kp.canon(x), q.canon(x)):
				pi.d.add(p.pos, "key: %s overlaps %s (one contains the other)", p.text, q.opt.text)
				ok = false
			}
		}
		for _, q := range exPaths {
			if covers(q.canon(x), kp.canon(x)) || covers(kp.canon(x), q.canon(x)) {
				pi.d.add(p.pos, "key: %s is also excluded (exclude=%s)", p.text, q.opt.text)
				ok = false
			}
		}
		keyPaths = append(keyPaths, kp)
	}
	return keyPaths, ok
}

// omitPath is one omit= path: the result, then the fields, promoted ones
// through their embeddings.
type omitPath struct {
	idx  int
	hops []string
}

// omitTrees resolves x's omit= paths into a tree per result, and lists
// the paths a doc line names (those no other one covers); false after a
// diagnostic.
func (pi *pkgInfo) omitTrees(x *fn) (omits []omitTree, omitted []string, ok bool) {
	var paths []omitPath
	ok = true
	for _, p := range x.opts.omit {
		if op, good := pi.resolveOmit(x, p); good {
			paths = append(paths, op)
		} else {
			ok = false
		}
	}
	if !ok {
		return nil, nil, false
	}
	// A path under another omitted path is omitted already (r2.Body under
	// r2): it is dropped, or its subtree would stand for the whole.
	canon := func(j int) string {
		return strings.Join(append([]string{"r" + strconv.Itoa(paths[j].idx+1)}, paths[j].hops...), ".")
	}
	omits = make([]omitTree, len(x.result))
	for i, p := range paths {
		if coveredByOther(i, len(paths), canon) {
			continue
		}
		omitted = append(omitted, x.opts.omit[i].text)
		if len(p.hops) == 0 {
			omits[p.idx] = omitTree{"": nil} // the whole result
			continue
		}
		omits[p.idx] = growTree(omits[p.idx], p.hops)
	}
	return omits, omitted, true
}

// resolveOmit resolves one omit= path of x; false after a diagnostic.
func (pi *pkgInfo) resolveOmit(x *fn, p pathOpt) (omitPath, bool) {
	segs := strings.Split(p.text, ".")
	idx := -1
	var names []string
	for i := range x.result {
		n := resultName(x, i)
		names = append(names, n)
		if segs[0] == n || segs[0] == "r"+strconv.Itoa(i+1) {
			idx = i
		}
	}
	switch {
	case idx < 0 && len(names) == 0:
		pi.d.add(p.pos, "omit: %s has no result to omit (it returns only an error)", x.name)
		return omitPath{}, false
	case idx < 0:
		pi.d.add(p.pos, "omit: %s names no result of %s (its results: %s)", p.text, x.name, strings.Join(names, ", "))
		return omitPath{}, false
	}
	t := x.result[idx]
	// Promoted fields go through the embedded fields that hold them,
	// which the codec stores by name: the tree names them all.
	var hops []string
	for _, f := range segs[1:] {
		path, amb := fieldPath(t, f)
		if len(amb) > 0 {
			here := strings.Join(append([]string{segs[0]}, hops...), ".")
			pi.d.add(p.pos, "omit: %s.%s is ambiguous: %s is promoted from %s at the same depth (name one: %s)", here, f, f, strings.Join(amb, " and "), fullPaths(here, amb, f))
			return omitPath{}, false
		}
		if path == nil {
			path = []string{f}
		}
		for _, h := range path {
			if pt, isPtr := t.Underlying().(*types.Pointer); isPtr {
				t = pt.Elem()
			}
			found := structField(t, h)
			if found == nil {
				pi.d.add(p.pos, "omit: %s: %s has no field %s", p.text, pi.typeString(t), h)
				return omitPath{}, false
			}
			t = found.Type()
		}
		hops = append(hops, path...)
	}
	return omitPath{idx, hops}, true
}

// analyze finds the package's annotated functions and plans its file; nil
// when it has none.
func (pi *pkgInfo) analyze() *filePlan {
	fns := pi.collect()
	if len(fns) == 0 && len(pi.steps) == 0 {
		return nil
	}
	since := len(pi.d.list) // the plan's diagnostics count as the file's
	fp := pi.plan(fns, pi.steps)
	fp.fns, fp.since = fns, since
	pi.decide(fp, fns)
	return fp
}

// decide decides what the file of fns and the package's steps relies on
// (its drift facts), its helpers and which packages' error types it restores, before
// the file is rendered; again when the precheck refuses a function.
func (pi *pkgInfo) decide(fp *filePlan, fns []*fn) {
	fp.errPkgs = pi.errPackages(fns)
	pi.fileDrift(fp, fns, pi.steps)
}

// resultFields names the fields of a result struct after the results,
// as omit= and diagnostics call them (their declared names, r1, r2… for
// unnamed or blank ones), each made unique in order.
func resultFields(x *fn) []string {
	used := map[string]bool{}
	out := make([]string, len(x.result))
	for i := range x.result {
		n := resultName(x, i)
		for used[n] {
			n += "_"
		}
		used[n] = true
		out[i] = n
	}
	return out
}

// isTime reports whether t is time.Time itself (a defined type over it
// has lost its methods and is rejected).
func isTime(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "time" && n.Obj().Name() == "Time"
}

// structField is the field of t's struct named name (the last of that
// name), nil if t is no struct or has none.
func structField(t types.Type, name string) *types.Var {
	st, isStruct := t.Underlying().(*types.Struct)
	var found *types.Var
	for i := 0; isStruct && i < st.NumFields(); i++ {
		if st.Field(i).Name() == name {
			found = st.Field(i)
		}
	}
	return found
}
