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
	// keyed are the types whose key helper was walked: strict and lenient
	// helpers read the same types.
	keyed map[helperKey]bool
	// inlining holds the named types being walked inline (no helper), as
	// writer.inlining.
	inlining map[*types.Named]bool
	// stored are the codec helpers walked, by codecHelperKey.
	stored map[string]*storedHelper
	// errPkgs are the packages of the known error types, walked once
	// when a result first holds an error (errWalked).
	errPkgs   []*types.Package
	errWalked bool
}

// storedHelper is what the walk knows of a codec helper: whether it is
// being walked (a use meanwhile is a recursion, assumed storable, as the
// generator assumes it) and whether its type can be stored.
type storedHelper struct{ building, ok bool }

// fileDrift are the drift facts of the file of fns and steps: those of
// the key= and order= paths (pathDrift), then what the key and codec code
// reaches, function by function in the order the file is written.
// errPkgs are the packages of the known error types.
func (pi *pkgInfo) fileDrift(fns, steps []*fn, errPkgs []*types.Package) *driftFacts {
	r := &reach{
		pi: pi, d: pathDrift(fns),
		keyed: map[helperKey]bool{}, inlining: map[*types.Named]bool{},
		stored: map[string]*storedHelper{}, errPkgs: errPkgs,
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
	return r.d
}

// keys walks x's key material: what keyStatements and orderStatements
// write.
func (r *reach) keys(x *fn) {
	res := &x.plan.resolved
	if res.keysOK {
		r.keyPaths(x, res)
	}
	if x.opts.orderSet && res.entOK {
		r.key(res.ent.typ, nil, false)
	}
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
			r.key(kp.typ, nil, false)
		}
	}
	if single || !r.pi.isDefaultKey(x, res.ex, res.keyPaths) {
		r.defaultKey(x, res.ex)
	}
}

// defaultKey walks every parameter the default key writes.
func (r *reach) defaultKey(x *fn, ex exclusions) {
	for i, p := range x.params {
		if !p.isCtx && !ex.whole[i] && r.pi.notIdentity(p) == "" {
			r.key(p.typ, ex.trees[i], false)
		}
	}
}

// key walks what writer.write writes of a value of t: ex are the fields
// exclude= leaves out, raw says t's own helper is being walked.
func (r *reach) key(t types.Type, ex exTree, raw bool) {
	pi := r.pi
	r.d.pinAlias(t)
	t = types.Unalias(t)
	if tp, ok := t.(*types.TypeParam); ok {
		r.keyTypeParam(tp)
		return
	}
	if ex == nil && !raw {
		if oldKeyer(t, pi.types.keyer) {
			return
		}
		if n, ok := pi.keyedByHelper(t); ok {
			r.keyHelper(n)
			return
		}
		if pi.keyedAsMethod(t) {
			return
		}
		if n, ok := t.(*types.Named); ok && pi.hasKeyHelper(n) {
			if r.inlining[n.Origin()] {
				return
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
	r.keyShape(t, ex)
}

// keyHelper walks the body of n's key helper, once per file.
func (r *reach) keyHelper(n *types.Named) {
	hk := helperKey{obj: n.Obj(), inst: instanceKey(n)}
	if r.keyed[hk] {
		return
	}
	r.keyed[hk] = true
	outer := r.inlining
	r.inlining = map[*types.Named]bool{} // a helper's body starts afresh
	r.key(n, nil, true)
	r.inlining = outer
}

// keyShape walks a value of t by its shape.
func (r *reach) keyShape(t types.Type, ex exTree) {
	s := shapeOf(t)
	switch s.kind {
	case kindPointer:
		switch n, byHelper := r.pi.keyedByHelper(s.elem); {
		case basicWriter(s.elem) != "":
			r.d.pinAlias(s.elem) // idemimpl.KeyPtr
		case byHelper && ex == nil:
			r.d.pinAlias(s.elem)
			r.keyHelper(n)
		default:
			r.key(s.elem, ex, false)
		}
	case kindSlice:
		switch {
		case types.Identical(s.elem, types.Typ[types.Byte]):
		case basicWriter(s.elem) != "":
			r.d.pinAlias(s.elem) // idemimpl.KeyList
		default:
			r.key(s.elem, nil, false)
		}
	case kindArray:
		if !types.Identical(s.elem, types.Typ[types.Byte]) {
			r.key(s.elem, nil, false)
		}
	case kindMap:
		if basicWriter(s.key) != "" && basicWriter(s.elem) != "" {
			r.d.pinAlias(s.key) // idemimpl.KeyMap
			r.d.pinAlias(s.elem)
			return
		}
		r.key(s.key, nil, false)
		r.key(s.elem, nil, false)
	case kindStruct:
		r.keyStruct(s.strct, ex)
	case kindInterface:
		if n, ok := t.(*types.Named); ok {
			for _, vt := range r.pi.variants(n) {
				r.key(vt, nil, false)
			}
		}
	}
}

// keyStruct walks the fields writeStruct writes.
func (r *reach) keyStruct(u *types.Struct, ex exTree) {
	pi := r.pi
	for i := 0; i < u.NumFields(); i++ {
		f := u.Field(i)
		if f.Name() == "_" || reflect.StructTag(u.Tag(i)).Get("idem") == "-" {
			continue
		}
		sub, inEx := ex[f.Name()]
		switch {
		case inEx && len(sub) == 0, pi.types.isContext(f.Type()), !f.Exported() && f.Pkg() != pi.pkg.Types:
			continue
		case zeroSize(f.Type()):
			if _, isStruct := f.Type().Underlying().(*types.Struct); isStruct && !pi.keyedByMethod(f.Type()) {
				continue // no data, nothing written (zeroSizeField)
			}
		}
		r.key(f.Type(), sub, false)
	}
}

// keyTypeParam walks the single type of tp's constraint, which
// writer.typeParam writes a value of tp as; nothing else is read.
func (r *reach) keyTypeParam(tp *types.TypeParam) {
	wk := r.pi.types
	if (wk.keyer != nil && types.Implements(tp, wk.keyer)) || types.Implements(tp, wk.binaryMarshaler) || types.Implements(tp, wk.textMarshaler) {
		return
	}
	terms, ok := typeTerms(tp.Constraint())
	if !ok || len(terms) == 0 {
		return
	}
	if m, _ := basicKind(terms); m == "" && len(terms) == 1 && !terms[0].Tilde() && r.pi.renderable(terms[0].Type()) {
		r.key(terms[0].Type(), nil, false)
	}
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
	if h, ok := r.stored[key]; ok {
		return h.building || h.ok
	}
	h := &storedHelper{building: true}
	r.stored[key] = h
	h.ok = r.storeShape(n, omit)
	h.building = false
	if h.ok {
		r.d.readFields(r.x, n)
	}
	return h.ok
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
