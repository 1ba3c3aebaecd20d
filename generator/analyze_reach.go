package generator

import (
	"go/types"
	"reflect"
	"sort"
	"strconv"

	"golang.org/x/tools/go/types/typeutil"
)

// The drift facts of a file: the types its key and codec code relies on,
// decided before any of it is written. The walk goes where the key
// writer (render_keys.go) and the codec generator (render_codec*.go)
// will go, taking their turns by the same questions (analyze_types.go,
// analyze_storage.go): a helper of the type's own, a method or a
// well-known type, else the value's shape. At each type it notes what
// the code written there relies on; render reads the facts and notes
// none (driftFacts.seal).
//
// The writers note a type's facts before they know whether it can be
// keyed or stored, and keep them; so does the walk. A file with a type
// that cannot be keyed or stored on a wrapper's way is not written, but
// some ways are tried without a diagnostic: the variants of a union, the
// known error types (errorTypes) and the strict key helper a
// payload helper tries first. A codec helper's struct is read only when
// the helper is written (its type can be stored).
//
// The codec walk also decides what storing each result finds
// (analyze_codecfacts.go): the problems that refuse a wrapper, each codec
// helper's facts, the variants of each union that are stored and the
// error types restored as themselves. Render writes only what these say
// can be stored, and walks no type for its problems.

// reach is the walk of one file.
type reach struct {
	pi *pkgInfo
	d  *driftFacts
	// x is the function whose code is walked, nil for the known error
	// types; spec is its specBase, which names the codec helpers that
	// omit= specialises.
	x    *fn
	spec string
	// keyBook and storeBook decide the key and codec helpers (by
	// codecHelperKey) as the writers do; mode is the key writer's
	// (writer.lenient, .payload) where the walk is.
	keyBook   *helperBook[helperKey]
	storeBook *helperBook[string]
	mode      keyMode
	// keyFacts are the decided key helpers' facts; kw records what the
	// key walk refuses and leaves out where it is.
	keyFacts map[helperKey]*keyFacts
	kw       *keyWalk
	// inlining holds the named types being walked inline (no helper), as
	// writer.inlining.
	inlining map[*types.Named]bool
	// errPkgs are the packages of the known error types, walked once
	// when a result first holds an error (errWalked).
	errPkgs   []*types.Package
	errWalked bool
	// cw records what the codec walk finds where it is; codecFacts are
	// the decided codec helpers' facts, variants the variants of each
	// union that can be stored, errTypes the known error types restored
	// as themselves.
	cw         *codecFacts
	codecFacts map[string]*codecFacts
	variants   map[*types.Named]map[string]bool
	errTypes   map[*types.TypeName]bool
	// keyTries are the values tried without a diagnostic (filePlan.keyTries).
	keyTries map[keyMode]*typeutil.Map
}

// fileDrift decides the drift facts of the file of fns and steps: those
// of the key= and order= paths (pathDrift), then what the key and codec
// code reaches, function by function in the order the file is written;
// and the file's helpers, with the key helpers' facts, decided on the
// way. fp.errPkgs are the packages of the known error types.
func (pi *pkgInfo) fileDrift(fp *filePlan, fns, steps []*fn) {
	r := &reach{
		pi: pi, d: pathDrift(fns),
		keyBook: newHelperBook[helperKey](), storeBook: newHelperBook[string](),
		inlining: map[*types.Named]bool{}, errPkgs: fp.errPkgs,
		keyFacts:   map[helperKey]*keyFacts{},
		codecFacts: map[string]*codecFacts{}, variants: map[*types.Named]map[string]bool{},
		errTypes: map[*types.TypeName]bool{}, keyTries: map[keyMode]*typeutil.Map{},
	}
	for _, g := range groupFns(fns) {
		for _, x := range g.fns {
			r.x, r.spec = x, specBase(x)
			r.keys(x)
			r.results(x)
		}
	}
	for _, x := range steps {
		r.x, r.spec = x, specBase(x)
		if len(x.result) == 1 {
			r.results(x)
		}
	}
	fp.drift, fp.keyFacts = r.d, r.keyFacts
	fp.codecFacts, fp.variants, fp.errTypes = r.codecFacts, r.variants, r.errTypes
	fp.keyTries = r.keyTries
	names := pi.newHelperNamer(fns, steps)
	codec := r.storeBook.plans(codecKind, nil, names)
	for i, h := range codec {
		if f := r.codecFacts[h.Type]; h.Failed && f != nil {
			codec[i].Problems = f.problemLines()
		}
	}
	fp.Helpers = append(r.keyBook.plans(keyKind, r.keyFacts, names), codec...)
}

// keys walks x's key material: what keyStatements and orderStatements
// write, recording what each place refuses and leaves out (x.plan.keys);
// its helpers' facts are the plan's.
func (r *reach) keys(x *fn) {
	res := &x.plan.resolved
	if res.keysOK {
		r.keyPaths(x, res)
	}
	if x.opts.orderSet && res.entOK {
		x.plan.keys.entity = r.keySite(res.ent.typ, nil, res.ent.opt.text, keyWalk{noAdvice: true})
	}
}

// keySite walks a value of t written at path (ex: what exclude= leaves
// out) with kw as the place starts (exclude= advice or none), and
// returns what kw recorded.
func (r *reach) keySite(t types.Type, ex exTree, path string, kw keyWalk) *keyWalk {
	r.kw = &kw
	r.key(t, ex, false, path)
	out := r.kw
	r.kw = nil
	return out
}

// keyPaths walks the default key, or the key= paths and the payload
// fingerprint when key= is not exactly the default key.
func (r *reach) keyPaths(x *fn, res *resolvedPaths) {
	if !x.opts.keySet {
		x.plan.keys.params = r.defaultKey(x, res.ex)
		return
	}
	single := len(res.keyPaths) == 1 && isString(res.keyPaths[0].typ) // an ID, written as it is
	x.plan.keys.paths = make([]*keyWalk, len(res.keyPaths))
	for i, kp := range res.keyPaths {
		if !single && r.pi.pathNotIdentity(x, kp) == "" {
			x.plan.keys.paths[i] = r.keySite(kp.typ, nil, kp.opt.text, keyWalk{noAdvice: true})
		}
	}
	if single || !r.pi.isDefaultKey(x, res.ex, res.keyPaths) {
		r.mode = keyMode{lenient: true, payload: true}
		x.plan.keys.payload = r.defaultKey(x, res.ex)
		r.mode = keyMode{}
	}
}

// defaultKey walks every parameter the default key writes, by index.
func (r *reach) defaultKey(x *fn, ex exclusions) []*keyWalk {
	sites := make([]*keyWalk, len(x.params))
	for i, p := range x.params {
		if !p.isCtx && !ex.whole[i] && r.pi.notIdentity(p) == "" {
			sites[i] = r.keySite(p.typ, ex.trees[i], keyParamName(x, i), keyWalk{exPath: keyParamName(x, i)})
		}
	}
	return sites
}

// keyParamName is how the default key's paths name parameter i: as
// exclude= and key= accept it.
func keyParamName(x *fn, i int) string {
	if name := x.sig.Params().At(i).Name(); name != "" && name != "_" {
		return name
	}
	return x.params[i].name
}

// key walks what writer.write writes of a value of t at path: ex are the
// fields exclude= leaves out, raw says t's own helper is being walked.
// False where the writer refuses the value, by the same rules; r.kw
// records why, as the wrapper reports it.
func (r *reach) key(t types.Type, ex exTree, raw bool, path string) bool {
	pi := r.pi
	r.d.pinAlias(t)
	t = types.Unalias(t)
	if tp, ok := t.(*types.TypeParam); ok {
		return r.keyTypeParam(tp, path)
	}
	if ex == nil && !raw {
		if oldKeyer(t, pi.types.keyer) {
			r.kw.refuse(path, oldKeyerReason, oldKeyerHint)
			return false
		}
		if n, ok := pi.keyedByHelper(t); ok {
			return r.keyHelper(n, path)
		}
		if pi.keyedAsMethod(t) {
			return true
		}
		if n, ok := t.(*types.Named); ok && pi.hasKeyHelper(n) {
			if r.inlining[n.Origin()] {
				r.kw.refuse(path, "recursive type "+pi.typeString(t)+" cannot be named here", keyerHint)
				return false // a recursive type the file cannot name
			}
			r.inlining[n.Origin()] = true
			defer delete(r.inlining, n.Origin())
		}
	}
	if n, ok := t.(*types.Named); ok {
		if _, isStruct := n.Underlying().(*types.Struct); isStruct {
			r.d.readFields(r.x, n)
		} else {
			r.d.pinNamed(n)
		}
	}
	return r.keyShape(t, ex, path)
}

// keyHelper walks the body of n's key helper, once per file but as the
// book rules (a payload helper is the strict one where that can be
// written), and records at path what it leaves out or refuses; false if
// n cannot be keyed.
func (r *reach) keyHelper(n *types.Named, path string) bool {
	hk, ok := r.decideKeyHelper(n, r.mode.payload)
	r.kw.useHelper(r.keyFacts[hk], path, r.keyBook.states[hk].recursive)
	return ok
}

// decideKeyHelper decides n's key helper (lenient: the payload's) on its
// first use, and its facts.
func (r *reach) decideKeyHelper(n *types.Named, lenient bool) (helperKey, bool) {
	if lenient {
		if hk, ok := r.decideKeyHelper(n, false); ok {
			return hk, true
		}
	}
	hk := helperKey{obj: n.Obj(), lenient: lenient, inst: instanceKey(n)}
	if st := r.keyBook.use(hk); st != nil {
		return hk, !st.failed
	}
	mark := r.keyBook.start(hk, types.TypeString(n, nil), r.pi.keyHelperBase(n))
	inlining, kw, mode := r.inlining, r.kw, r.mode
	// A helper's body starts afresh, at root.
	r.inlining, r.kw, r.mode = map[*types.Named]bool{}, &keyWalk{exPath: root}, keyMode{lenient, lenient}
	ok := r.key(n, nil, true, root)
	facts := &keyFacts{typ: types.TypeString(n, nil), skipped: r.kw.skipped}
	if !ok {
		facts.problems, facts.skipped = r.kw.problems, nil
	}
	r.inlining, r.kw, r.mode = inlining, kw, mode
	for _, d := range r.keyBook.finish(hk, mark, ok) {
		delete(r.keyFacts, d)
	}
	r.keyFacts[hk] = facts
	return hk, ok
}

// keyShape walks a value of t by its shape.
func (r *reach) keyShape(t types.Type, ex exTree, path string) bool {
	s := shapeOf(t)
	switch s.kind {
	case kindPointer:
		switch n, byHelper := r.pi.keyedByHelper(s.elem); {
		case basicWriter(s.elem) != "":
			r.d.pinAlias(s.elem) // idemimpl.KeyPtr
			return true
		case byHelper && ex == nil:
			r.d.pinAlias(s.elem)
			return r.keyHelper(n, path)
		}
		return r.key(s.elem, ex, false, path)
	case kindSlice:
		switch {
		case types.Identical(s.elem, types.Typ[types.Byte]):
			return true
		case basicWriter(s.elem) != "":
			r.d.pinAlias(s.elem) // idemimpl.KeyList
			return true
		}
		return r.key(s.elem, nil, false, path+"[i]")
	case kindArray:
		return types.Identical(s.elem, types.Typ[types.Byte]) || r.key(s.elem, nil, false, path+"[i]")
	case kindMap:
		if basicWriter(s.key) != "" && basicWriter(s.elem) != "" {
			r.d.pinAlias(s.key) // idemimpl.KeyMap
			r.d.pinAlias(s.elem)
			return true
		}
		k := r.key(s.key, nil, false, path+"[key]")
		return r.key(s.elem, nil, false, path+"[value]") && k
	case kindStruct:
		return r.keyStruct(t, s.strct, ex, path)
	case kindInterface:
		return r.keyInterface(t, s.iface, path)
	}
	if reason, hint := r.pi.shapeRefusal(t, s, path); reason != "" {
		r.kw.refuse(path, reason, hint) // funcs, channels
		return false
	}
	return true
}

// keyInterface walks a union's variants (one that can be keyed is
// enough); an any is keyed at run time, other interfaces are refused.
func (r *reach) keyInterface(t types.Type, u *types.Interface, path string) bool {
	if n, ok := t.(*types.Named); ok {
		if vs := r.pi.variants(n); len(vs) > 0 {
			keyed, kw := false, r.kw
			for _, vt := range vs {
				r.kw = &keyWalk{noAdvice: true} // a variant that cannot be keyed is left out
				if r.try(vt, nil, "") {
					keyed = true
					for _, s := range r.kw.skipped {
						kw.skip(s)
					}
				}
			}
			r.kw = kw
			if !keyed {
				r.kw.refuse(path, r.pi.ifaceRefusal(t, true), keyIfaceHint)
			}
			return keyed
		}
	}
	if !u.Empty() {
		r.kw.refuse(path, r.pi.ifaceRefusal(t, false), keyIfaceHint)
	}
	return u.Empty()
}

// try walks a value of t that the writer writes only where it can be
// keyed, and records whether it can (filePlan.keyTries). A type tried
// in one mode at two places is keyed only where both can.
func (r *reach) try(t types.Type, ex exTree, path string) bool {
	ok := r.key(t, ex, false, path)
	m := r.keyTries[r.mode]
	if m == nil {
		m = new(typeutil.Map)
		r.keyTries[r.mode] = m
	}
	if was, seen := m.At(t).(bool); seen {
		ok = ok && was
	}
	m.Set(t, ok)
	return ok
}

// keyStruct walks the fields writeStruct writes.
func (r *reach) keyStruct(t types.Type, u *types.Struct, ex exTree, path string) bool {
	pi, ok := r.pi, true
	exHere := !r.kw.noAdvice && r.kw.exPath == path
	for i := 0; i < u.NumFields(); i++ {
		f := u.Field(i)
		if f.Name() == "_" || reflect.StructTag(u.Tag(i)).Get("idem") == "-" {
			continue
		}
		sub, inEx := ex[f.Name()]
		fp := joinPath(path, f.Name())
		switch {
		case inEx && len(sub) == 0:
			continue
		case pi.types.isContext(f.Type()):
			r.kw.skip(fp + " (a context)")
			continue
		case !f.Exported() && f.Pkg() != pi.pkg.Types:
			ok = r.foreignField(t, u, i, path) && ok
			continue
		case zeroSize(f.Type()):
			if _, isStruct := f.Type().Underlying().(*types.Struct); isStruct && !pi.keyedByMethod(f.Type()) {
				continue // no data, nothing written (zeroSizeField)
			}
			kw, mode := r.kw, r.mode
			r.kw, r.mode.lenient = &keyWalk{noAdvice: true}, false
			r.try(f.Type(), sub, fp) // never refused (writer.zeroSizeField)
			r.kw, r.mode = kw, mode
			continue
		}
		saved := r.kw.exPath
		if exHere {
			r.kw.exPath = fp
		}
		ok = r.key(f.Type(), sub, false, fp) && ok
		r.kw.exPath = saved
	}
	return ok
}

// foreignField reports whether field i of u, an unexported field of
// another package's type t, is left out rather than refused (as
// writer.foreignField).
func (r *reach) foreignField(t types.Type, u *types.Struct, i int, path string) bool {
	if zeroSize(u.Field(i).Type()) {
		return true
	}
	if sk := r.pi.foreignSkipped(t, u, i, path, r.mode.lenient); sk != "" {
		r.kw.skip(sk)
		return true
	}
	r.kw.refuseForeign(r.pi, t, u, i, path)
	return false
}

// keyTypeParam walks the single type of tp's constraint, which
// writer.typeParam writes a value of tp as; nothing else is read.
func (r *reach) keyTypeParam(tp *types.TypeParam, path string) bool {
	wk := r.pi.types
	if (wk.keyer != nil && types.Implements(tp, wk.keyer)) || types.Implements(tp, wk.binaryMarshaler) || types.Implements(tp, wk.textMarshaler) {
		return true
	}
	if terms, ok := typeTerms(tp.Constraint()); ok && len(terms) > 0 {
		if m, _ := basicKind(terms); m != "" {
			return true
		}
		if len(terms) == 1 && !terms[0].Tilde() && r.pi.renderable(terms[0].Type()) {
			return r.key(terms[0].Type(), nil, false, path)
		}
	}
	if r.mode.lenient {
		r.kw.skip(typeParamSkipped(path, tp)) // left out of the payload fingerprint
		return true
	}
	reason, hint := r.pi.typeParamRefusal(tp)
	r.kw.refuse(path, reason, hint)
	return false
}

// results walks x's result codec: what resultCodec writes; what it finds
// is x's plan (funcPlan.codec).
func (r *reach) results(x *fn) {
	res := &x.plan.resolved
	for _, t := range x.result {
		if mentionsTypeParam(t) {
			return // refused (typeParamResults)
		}
	}
	if !res.omitOK {
		return
	}
	r.cw = newCodecFacts()
	for i, t := range x.result {
		if _, whole := res.omits[i][""]; !whole {
			r.store(t, resultName(x, i), "", res.omits[i])
		}
	}
	x.plan.codec, r.cw = r.cw, nil
}

// store walks what codecGen.enc writes of a value of t at path (inside
// the outermost other package's value at foreignAt, if any), recording
// what it finds in r.cw; false if it cannot be stored.
func (r *reach) store(t types.Type, path, foreignAt string, omit omitTree) bool {
	pi := r.pi
	if n, ok := pi.codecHelperType(t); ok {
		return r.storeHelper(t, n, path, pi.foreignRoot(n, path, foreignAt), omit)
	}
	if !pi.renderable(t) {
		r.cw.fail(path, unnameable(pi, t), foreignAt)
		return false
	}
	r.d.pinAlias(t)
	t = types.Unalias(t)
	if why := lossyPair(pi, t); why != "" {
		r.cw.fail(path, why, foreignAt)
		return false
	}
	if pi.storedBy(t) != (storage{}) {
		return true
	}
	if n, ok := t.(*types.Named); ok {
		r.d.pinNamed(n)
	}
	return r.storeShape(t, path, pi.foreignRoot(t, path, foreignAt), omit)
}

// storeHelper walks the codec helpers of n (t, maybe an alias of it),
// once per file, for their facts (r.codecFacts, paths relative to n's
// value); its struct is read when it can be stored. A use lifts the
// helper's problems to path, or takes in what it stores.
func (r *reach) storeHelper(t types.Type, n *types.Named, path, foreignAt string, omit omitTree) bool {
	r.d.pinAlias(t)
	r.d.pinNamed(n)
	key := codecHelperKey(n, r.spec, omit)
	st := r.storeBook.use(key)
	if st == nil {
		st = r.buildStoreHelper(n, key, omit)
	}
	f := r.codecFacts[key] // nil while it is being built: assumed storable
	switch {
	case f == nil:
	case st.failed:
		r.cw.lift(f, st.recursive, path, foreignAt)
	default:
		r.cw.absorb(f)
	}
	return !st.failed
}

// buildStoreHelper decides the codec helper of n under key.
func (r *reach) buildStoreHelper(n *types.Named, key string, omit omitTree) *helperState {
	mark := r.storeBook.start(key, key, r.pi.codecHelperBase(n, r.spec, omit))
	outer := r.cw
	r.cw = newCodecFacts()
	// Paths inside the helper are relative; foreignAt "" at the root of an
	// own type, or the root itself of another package's.
	root := ""
	if n.Obj().Pkg() != r.pi.pkg.Types {
		root = "\x00" // inside another package's type: advise omitting its root
	}
	r.storeShape(n, "", root, omit)
	f := r.cw
	r.cw = outer
	ok := len(f.problems) == 0
	for _, k := range r.storeBook.finish(key, mark, ok) {
		delete(r.codecFacts, k)
	}
	r.codecFacts[key] = f
	if ok {
		r.d.readFields(r.x, n)
	}
	return r.storeBook.states[key]
}

// storeShape walks what codecGen.encInline writes of a value of t by its
// shape.
func (r *reach) storeShape(t types.Type, path, foreignAt string, omit omitTree) bool {
	pi := r.pi
	sh := shapeOf(t)
	if why := pi.unstorable(t, sh); why != "" {
		r.cw.fail(path, why, foreignAt)
		return false
	}
	switch sh.kind {
	case kindPointer:
		return r.storeElem(sh.elem, path, foreignAt, omit)
	case kindSlice:
		if isNamed(t, "net", "IP") || isByte(sh.elem) {
			return true // bytes
		}
		return r.storeElem(sh.elem, path+"[]", foreignAt, nil)
	case kindArray:
		return r.store(sh.elem, path+"[]", foreignAt, nil)
	case kindMap:
		if orderedCoder(sh.key) != "" && basicCoder(sh.elem) != "" {
			return true // idemimpl.EncMap
		}
		k := r.store(sh.key, path+"[]", foreignAt, nil)
		return r.store(sh.elem, path+"[]", foreignAt, nil) && k
	case kindStruct:
		return r.storeStruct(t, sh.strct, path, foreignAt, omit)
	case kindInterface:
		return r.storeInterface(t, path, foreignAt)
	}
	return true
}

// storeElem walks the element of a pointer or slice: its helpers, an
// idemimpl coder of a basic type, else the element itself.
func (r *reach) storeElem(elem types.Type, path, foreignAt string, omit omitTree) bool {
	if n, ok := r.pi.codecHelperType(elem); ok {
		return r.storeHelper(elem, n, path, r.pi.foreignRoot(n, path, foreignAt), omit)
	}
	if basicCoder(elem) != "" {
		return true
	}
	return r.store(elem, path, foreignAt, omit)
}

// storeInterface walks an error (and then the known error types), a
// union's variants (one that can be stored is enough: the others are
// left out of its codec, fp.variants) or an any.
func (r *reach) storeInterface(t types.Type, path, foreignAt string) bool {
	pi := r.pi
	if types.Identical(t, errorType) {
		r.cw.errs = true
		r.knownErrors()
		return true
	}
	n, ok := t.(*types.Named)
	if !ok || len(pi.variants(n)) == 0 {
		return true // any
	}
	stored := map[string]bool{}
	for _, vt := range pi.variants(n) {
		outer := r.cw
		r.cw = newCodecFacts()
		r.store(vt, path, foreignAt, nil)
		vf := r.cw
		r.cw = outer
		if len(vf.problems) == 0 {
			stored[types.TypeString(vt, nil)] = true
			r.cw.absorb(vf)
		}
	}
	r.variants[n] = stored
	if len(stored) == 0 {
		r.cw.fail(path, noVariants(pi, n), foreignAt)
		return false
	}
	r.cw.addUnion(pi.typeString(n))
	return true
}

// storeStruct walks the fields codecGen.eachField stores, recording why
// the others are not.
func (r *reach) storeStruct(t types.Type, u *types.Struct, path, foreignAt string, omit omitTree) bool {
	pi := r.pi
	own := true
	if nt, ok := t.(*types.Named); ok && nt.Obj().Pkg() != pi.pkg.Types {
		own = false
	}
	ok, exported := true, 0
	for i := 0; i < u.NumFields(); i++ {
		f := u.Field(i)
		sub, omitted := omit[f.Name()]
		if omitted && len(sub) == 0 {
			if f.Exported() {
				exported++ // left out by name, on the doc line: not lost silently
			}
			continue
		}
		switch pi.fieldStorage(u, i, own, sub) {
		case fieldStored:
			exported++
			ok = r.store(f.Type(), joinPath(path, f.Name()), foreignAt, sub) && ok
		case fieldOpaque:
			r.cw.lossy[pi.typeString(f.Type())] = true
		case fieldJSONSkipped:
			r.cw.skipped[pi.typeString(t)+"."+f.Name()] = true
		case fieldLossyOwner:
			r.cw.lossy[pi.typeString(t)] = true
		case fieldRefused:
			r.cw.fail(joinPath(path, f.Name()), unexportedFieldMsg, "")
			ok = false
		}
	}
	if !own && exported == 0 && r.cw.lossy[pi.typeString(t)] {
		r.cw.fail(path, noExportedFields(pi, t), foreignAt)
		return false
	}
	return ok
}

// knownErrors walks the known error types (knownErrors), once per file,
// and keeps those a codec restores as themselves (fp.errTypes): nothing
// of them fails, is lost or is left out.
func (r *reach) knownErrors() {
	if r.errWalked {
		return
	}
	r.errWalked = true
	x, spec, outer := r.x, r.spec, r.cw
	r.x, r.spec = nil, "Errors"
	for _, p := range r.errPkgs {
		for _, name := range p.Scope().Names() {
			o := p.Scope().Lookup(name)
			if t, ok := r.pi.implementer(o, errorIface); ok && r.pi.renderable(t) {
				r.cw = newCodecFacts()
				r.store(t, "x", "", nil)
				if f := r.cw; len(f.problems) == 0 && len(f.lossy) == 0 && len(f.skipped) == 0 {
					r.errTypes[o.(*types.TypeName)] = true
				}
			}
		}
	}
	r.x, r.spec, r.cw = x, spec, outer
}

// foreignRoot returns the path of the outermost other package's value:
// path if t starts one, else foreignAt.
func (pi *pkgInfo) foreignRoot(t types.Type, path, foreignAt string) string {
	named, ok := t.(*types.Named)
	if !ok {
		return foreignAt
	}
	if named.Obj().Pkg() != nil && named.Obj().Pkg() != pi.pkg.Types && foreignAt == "" {
		return path
	}
	return foreignAt
}

// Why a value cannot be stored, worded once.
func unnameable(pi *pkgInfo, t types.Type) string {
	return "type " + pi.typeString(t) + " cannot be named in the generated file (unexported, or internal to another module)"
}

const unexportedFieldMsg = "unexported field (export it, or give the type a marshaling pair)"

func noExportedFields(pi *pkgInfo, t types.Type) string {
	return pi.typeString(t) + " has no exported fields: all its state would be lost on replay"
}

func noVariants(pi *pkgInfo, n *types.Named) string {
	return "interface " + pi.typeString(n) + " cannot be decoded to its dynamic type (no type of its package that implements it can be stored)"
}

// resultName is how diagnostics and omit= call result i: its declared
// name, else rN.
func resultName(x *fn, i int) string {
	if n := x.sig.Results().At(i).Name(); n != "" && n != "_" {
		return n
	}
	return "r" + strconv.Itoa(i+1)
}

// group is the wrapper type of the free functions (recv nil) or of one
// receiver type's methods.
type group struct {
	recv *types.TypeName
	fns  []*fn
}

// groupFns splits fns by receiver: free functions first, then types in
// order of their first annotated method. The file is written in this
// order.
func groupFns(fns []*fn) []*group {
	var gs []*group
	byRecv := map[*types.TypeName]*group{}
	for _, x := range fns {
		g := byRecv[x.recv]
		if g == nil {
			g = &group{recv: x.recv}
			byRecv[x.recv] = g
			gs = append(gs, g)
		}
		g.fns = append(g.fns, x)
	}
	sort.SliceStable(gs, func(i, j int) bool { return gs[i].recv == nil && gs[j].recv != nil })
	return gs
}

// specBase ends the package-level names of x's declarations (idemSpecF,
// idemStepCodecF) and names the codec helpers omit= specialises for it.
func specBase(x *fn) string {
	if x.recv != nil {
		return upperFirst(x.recv.Name()) + upperFirst(x.name)
	}
	return upperFirst(x.name)
}
