package generator

import (
	"go/types"
	"reflect"
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
// known error types (render_errtypes.go) and the strict key helper a
// payload helper tries first. A codec helper's struct is read only when
// the helper is written (its type can be stored).

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
	// codecHelperKey) as the writers do; lenient: the payload's key
	// helpers are being walked.
	keyBook   *helperBook[helperKey]
	storeBook *helperBook[string]
	lenient   bool
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
		keyFacts: map[helperKey]*keyFacts{},
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
	names := pi.newHelperNamer(fns, steps)
	fp.Helpers = append(r.keyBook.plans(keyKind, r.keyFacts, names), r.storeBook.plans(codecKind, nil, names)...)
}

// keys walks x's key material: what keyStatements and orderStatements
// write. What the function's own paths refuse is the writer's to word
// yet (a walk of its own, kw, is dropped); its helpers' is the plan's.
func (r *reach) keys(x *fn) {
	res := &x.plan.resolved
	r.kw = &keyWalk{}
	if res.keysOK {
		r.keyPaths(x, res)
	}
	if x.opts.orderSet && res.entOK {
		r.key(res.ent.typ, nil, false, "")
	}
	r.kw = nil
}

// keyPaths walks the default key, or the key= paths and the payload
// fingerprint when key= is not exactly the default key.
func (r *reach) keyPaths(x *fn, res *resolvedPaths) {
	if !x.opts.keySet {
		r.defaultKey(x, res.ex)
		return
	}
	single := len(res.keyPaths) == 1 && isString(res.keyPaths[0].typ) // an ID, written as it is
	for _, kp := range res.keyPaths {
		if !single && r.pi.pathNotIdentity(x, kp) == "" {
			r.key(kp.typ, nil, false, "")
		}
	}
	if single || !r.pi.isDefaultKey(x, res.ex, res.keyPaths) {
		r.lenient = true
		r.defaultKey(x, res.ex)
		r.lenient = false
	}
}

// defaultKey walks every parameter the default key writes.
func (r *reach) defaultKey(x *fn, ex exclusions) {
	for i, p := range x.params {
		if !p.isCtx && !ex.whole[i] && r.pi.notIdentity(p) == "" {
			r.key(p.typ, ex.trees[i], false, "")
		}
	}
}

// key walks what writer.write writes of a value of t at path: ex are the
// fields exclude= leaves out, raw says t's own helper is being walked.
// False where the writer refuses the value, by the same rules; r.kw
// records why, as the writer words it.
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
	hk, ok := r.decideKeyHelper(n, r.lenient)
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
	inlining, kw, outerLenient := r.inlining, r.kw, r.lenient
	// A helper's body starts afresh, at root.
	r.inlining, r.kw, r.lenient = map[*types.Named]bool{}, &keyWalk{exPath: root}, lenient
	ok := r.key(n, nil, true, root)
	facts := &keyFacts{typ: types.TypeString(n, nil), skipped: r.kw.skipped}
	if !ok {
		facts.problems, facts.skipped = r.kw.problems, nil
	}
	r.inlining, r.kw, r.lenient = inlining, kw, outerLenient
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
				if r.key(vt, nil, false, "") {
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
			kw := r.kw
			r.kw = &keyWalk{noAdvice: true}
			r.key(f.Type(), sub, false, fp) // tried: never refused
			r.kw = kw
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
	if sk := r.pi.foreignSkipped(t, u, i, path, r.lenient); sk != "" {
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
	if r.lenient {
		r.kw.skip(typeParamSkipped(path, tp)) // left out of the payload fingerprint
		return true
	}
	reason, hint := r.pi.typeParamRefusal(tp)
	r.kw.refuse(path, reason, hint)
	return false
}

// results walks x's result codec: what resultCodec writes.
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
	for i, t := range x.result {
		if _, whole := res.omits[i][""]; !whole {
			r.store(t, res.omits[i])
		}
	}
}

// store walks what codecGen.enc writes of a value of t; false if it
// cannot be stored.
func (r *reach) store(t types.Type, omit omitTree) bool {
	pi := r.pi
	if n, ok := pi.codecHelperType(t); ok {
		return r.storeHelper(t, n, omit)
	}
	if !pi.renderable(t) {
		return false
	}
	r.d.pinAlias(t)
	t = types.Unalias(t)
	if lossyPair(pi, t) != "" {
		return false
	}
	if pi.storedBy(t) != (storage{}) {
		return true
	}
	if n, ok := t.(*types.Named); ok {
		r.d.pinNamed(n)
	}
	return r.storeShape(t, omit)
}

// storeHelper walks the codec helpers of n (t, maybe an alias of it),
// once per file; its struct is read when it can be stored.
func (r *reach) storeHelper(t types.Type, n *types.Named, omit omitTree) bool {
	r.d.pinAlias(t)
	r.d.pinNamed(n)
	key := codecHelperKey(n, r.spec, omit)
	if st := r.storeBook.use(key); st != nil {
		return !st.failed // one being walked is assumed storable
	}
	mark := r.storeBook.start(key, key, r.pi.codecHelperBase(n, r.spec, omit))
	ok := r.storeShape(n, omit)
	r.storeBook.finish(key, mark, ok)
	if ok {
		r.d.readFields(r.x, n)
	}
	return ok
}

// storeShape walks what codecGen.encInline writes of a value of t by its
// shape.
func (r *reach) storeShape(t types.Type, omit omitTree) bool {
	pi := r.pi
	sh := shapeOf(t)
	if pi.unstorable(t, sh) != "" {
		return false
	}
	switch sh.kind {
	case kindPointer:
		return r.storeElem(sh.elem, omit)
	case kindSlice:
		if isNamed(t, "net", "IP") || isByte(sh.elem) {
			return true // bytes
		}
		return r.storeElem(sh.elem, nil)
	case kindArray:
		return r.store(sh.elem, nil)
	case kindMap:
		if orderedCoder(sh.key) != "" && basicCoder(sh.elem) != "" {
			return true // idemimpl.EncMap
		}
		k := r.store(sh.key, nil)
		return r.store(sh.elem, nil) && k
	case kindStruct:
		return r.storeStruct(t, sh.strct, omit)
	case kindInterface:
		return r.storeInterface(t)
	}
	return true
}

// storeElem walks the element of a pointer or slice: its helpers, an
// idemimpl coder of a basic type, else the element itself.
func (r *reach) storeElem(elem types.Type, omit omitTree) bool {
	if n, ok := r.pi.codecHelperType(elem); ok {
		return r.storeHelper(elem, n, omit)
	}
	if basicCoder(elem) != "" {
		return true
	}
	return r.store(elem, omit)
}

// storeInterface walks an error (and then the known error types), a
// union's variants (one that can be stored is enough) or an any.
func (r *reach) storeInterface(t types.Type) bool {
	if types.Identical(t, errorType) {
		r.knownErrors()
		return true
	}
	n, ok := t.(*types.Named)
	if !ok || len(r.pi.variants(n)) == 0 {
		return true // any
	}
	stored := false
	for _, vt := range r.pi.variants(n) {
		stored = r.store(vt, nil) || stored
	}
	return stored
}

// storeStruct walks the fields codecGen.eachField stores.
func (r *reach) storeStruct(t types.Type, u *types.Struct, omit omitTree) bool {
	pi := r.pi
	own := true
	if nt, ok := t.(*types.Named); ok && nt.Obj().Pkg() != pi.pkg.Types {
		own = false
	}
	ok, exported, lossy := true, 0, false
	for i := 0; i < u.NumFields(); i++ {
		f := u.Field(i)
		sub, omitted := omit[f.Name()]
		switch k := pi.fieldStorage(u, i, own, sub); {
		case omitted && len(sub) == 0:
			if f.Exported() {
				exported++
			}
		case k == fieldStored:
			exported++
			ok = r.store(f.Type(), sub) && ok
		case k == fieldLossyOwner:
			lossy = true
		case k == fieldRefused:
			ok = false
		}
	}
	return ok && (own || exported > 0 || !lossy)
}

// knownErrors walks the known error types (knownErrors), once per file.
func (r *reach) knownErrors() {
	if r.errWalked {
		return
	}
	r.errWalked = true
	x, spec := r.x, r.spec
	r.x, r.spec = nil, "Errors"
	for _, p := range r.errPkgs {
		for _, name := range p.Scope().Names() {
			if t, ok := r.pi.implementer(p.Scope().Lookup(name), errorIface); ok && r.pi.renderable(t) {
				r.store(t, nil)
			}
		}
	}
	r.x, r.spec = x, spec
}
