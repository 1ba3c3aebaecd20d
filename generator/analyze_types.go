package generator

import (
	"go/types"
	"sort"
	"strings"
)

// Questions about types that analysis and rendering both ask: whether the
// generated file can spell a type, whether a method writes a type's key
// material, which types make up a union. They depend on the package and
// its reach, never on what has been rendered.

// renderable reports whether the generated file can spell t: every named
// type in it is one the file can name.
func (pi *pkgInfo) renderable(t types.Type) bool {
	switch t := t.(type) {
	case *types.Alias:
		if obj := t.Obj(); obj.Pkg() == nil || obj.Pkg() == pi.pkg.Types || (obj.Exported() && pi.nameable(obj)) {
			return true
		}
		return pi.renderable(types.Unalias(t))
	case *types.Basic:
		return true
	case *types.Named:
		if t.Obj().Pkg() == nil {
			return true // error
		}
		if !pi.nameable(t.Obj()) {
			if a, _ := pi.aliasFor(t); a == nil {
				return false
			}
		}
		for i := 0; i < t.TypeArgs().Len(); i++ {
			if !pi.renderable(t.TypeArgs().At(i)) {
				return false
			}
		}
		return true
	}
	switch s := shapeOf(t); s.kind {
	case kindPointer, kindSlice, kindArray, kindChan:
		return pi.renderable(s.elem)
	case kindMap:
		return pi.renderable(s.key) && pi.renderable(s.elem)
	case kindFunc:
		for _, tup := range []*types.Tuple{s.signature.Params(), s.signature.Results()} {
			for i := 0; i < tup.Len(); i++ {
				if !pi.renderable(tup.At(i).Type()) {
					return false
				}
			}
		}
		return true
	case kindStruct:
		return pi.allSpelled(s.strct.NumFields(), func(i int) types.Object { return s.strct.Field(i) })
	case kindInterface:
		return pi.allSpelled(s.iface.NumMethods(), func(i int) types.Object { return s.iface.Method(i) })
	}
	return false
}

// allSpelled reports whether the file can spell each of n fields or
// methods: visible from the package, of a type it can spell.
func (pi *pkgInfo) allSpelled(n int, at func(int) types.Object) bool {
	for i := 0; i < n; i++ {
		o := at(i)
		if (!o.Exported() && o.Pkg() != pi.pkg.Types) || !pi.renderable(o.Type()) {
			return false
		}
	}
	return true
}

// pinnable: declared in a package (not byte, rune, any, error), and not
// the standard library's.
func (pi *pkgInfo) pinnable(obj *types.TypeName) bool {
	return obj.Pkg() != nil && !pi.std.has(obj.Pkg())
}

// keyedByMethod reports whether t (or *t) writes its key material with a
// method: idem.Keyer, a protobuf message, a binary or text marshaler.
func (pi *pkgInfo) keyedByMethod(t types.Type) bool {
	wk := pi.types
	for _, i := range []*types.Interface{wk.keyer, wk.protoMessage, wk.binaryMarshaler, wk.textMarshaler} {
		if ok, _ := implements(t, i); ok {
			return true
		}
	}
	return false
}

// hasKeyHelper reports whether values of n are keyed by a helper of
// their own (idemKeyN): named composites, funcs, channels (refused once
// for all their uses) and interfaces keyed as unions.
func (pi *pkgInfo) hasKeyHelper(n *types.Named) bool {
	switch shapeOf(n).kind {
	case kindBasic:
		return false
	case kindInterface:
		return len(pi.variants(n)) > 0
	}
	return true
}

// An interface with methods in a result (slack's Block, a package's own
// `type Event interface{ isEvent() }`) is a union when its own package
// declares the types that implement it: the codec stores a value by its
// dynamic type's name and its value, for each of those types that it can
// store faithfully, and restores it as that type. A value of any other
// dynamic type fails the call's recording (ErrResultNotEncodable): loud,
// never a replay of something else. The wrapper's doc line names the
// interface. The standard library's interfaces (io.Reader, net.Conn) are
// behaviour, not data, and stay refused.

// maxVariants bounds a union's switch: an interface that more types of
// its package implement is not a union of data types.
const maxVariants = 128

// variants returns the types (T and *T, or *T when only the pointer has
// the methods) of n's package that implement the interface n, if n is a
// union; nil otherwise.
func (pi *pkgInfo) variants(n *types.Named) []types.Type {
	if vs, ok := pi.unionVariants[n]; ok {
		return vs
	}
	var vs []types.Type
	iface, _ := n.Underlying().(*types.Interface)
	p := n.Obj().Pkg()
	if iface != nil && !iface.Empty() && p != nil && !pi.std.has(p) && n.TypeArgs().Len() == 0 {
		for _, name := range p.Scope().Names() {
			t, ok := pi.implementer(p.Scope().Lookup(name), iface)
			if !ok {
				continue
			}
			vs = append(vs, t)
			if n, byValue := t.(*types.Named); byValue {
				vs = append(vs, types.NewPointer(n)) // a value may hold *T too
			}
		}
	}
	if len(vs) > maxVariants {
		vs = nil
	}
	if pi.unionVariants == nil {
		pi.unionVariants = map[*types.Named][]types.Type{}
	}
	pi.unionVariants[n] = vs
	return vs
}

// implementer returns the type declared by obj that implements iface
// and that the generated file can name: T when T has the methods, *T
// when only the pointer has them. Only this package's types may be
// unexported; generic and interface types are not implementers.
func (pi *pkgInfo) implementer(obj types.Object, iface *types.Interface) (types.Type, bool) {
	o, ok := obj.(*types.TypeName)
	if !ok || o.IsAlias() || (!o.Exported() && o.Pkg() != pi.pkg.Types) || !pi.nameable(o) {
		return nil, false
	}
	n, ok := o.Type().(*types.Named)
	if !ok || n.TypeParams().Len() > 0 || types.IsInterface(n) {
		return nil, false
	}
	switch {
	case types.Implements(n, iface):
		return n, true
	case types.Implements(types.NewPointer(n), iface):
		return types.NewPointer(n), true
	}
	return nil, false
}

// notIdentity says why parameter p is left out of the default key ("" if
// it is not): functional options and other funcs say how to make a call,
// not which call it is, and cannot be keyed anyway. A parameter typed by
// an interface named *Option* (option.RequestOption) counts too, unless
// its type writes its own key material.
func (pi *pkgInfo) notIdentity(p param) string {
	t := p.typ
	if p.variadic {
		t = t.(*types.Slice).Elem()
	}
	t = types.Unalias(t)
	if pi.keyedByMethod(t) {
		return "" // its type's author decided its key material
	}
	switch t.Underlying().(type) {
	case *types.Signature:
		if n, named := t.(*types.Named); p.variadic || (named && strings.Contains(n.Obj().Name(), "Option")) {
			return "functional options"
		}
		return "a func"
	case *types.Interface:
		if n, named := t.(*types.Named); named && strings.Contains(n.Obj().Name(), "Option") {
			return "functional options"
		}
	}
	return ""
}

// pathNotIdentity says why a key= path names what the default key leaves
// out as no part of a call's identity ("" if it does not).
func (pi *pkgInfo) pathNotIdentity(x *fn, kp keyPath) string {
	if pi.types.isContext(kp.typ) {
		return "a context"
	}
	if kp.recvField == "" && len(kp.fields) == 0 {
		return pi.notIdentity(x.params[kp.param])
	}
	return ""
}

// isDefaultKey reports whether key= names exactly the parameters the
// default key writes, whole and in order.
func (pi *pkgInfo) isDefaultKey(x *fn, ex exclusions, keyPaths []keyPath) bool {
	if len(ex.trees) > 0 {
		return false
	}
	var def []int
	for i, p := range x.params {
		if !p.isCtx && !ex.whole[i] && pi.notIdentity(p) == "" {
			def = append(def, i)
		}
	}
	if len(def) != len(keyPaths) {
		return false
	}
	for i := range def {
		if keyPaths[i].param != def[i] || len(keyPaths[i].fields) > 0 {
			return false
		}
	}
	return true
}

// oldKeyer reports whether t (or *t) has an IdemKey method that is not
// keyer's: written for an older idemgen, it would otherwise be ignored
// silently and the value keyed by its fields.
func oldKeyer(t types.Type, keyer *types.Interface) bool {
	if types.Implements(t, keyer) || types.Implements(types.NewPointer(t), keyer) {
		return false // its own IdemKey, or one promoted from an embedded Keyer
	}
	obj, _, _ := types.LookupFieldOrMethod(types.NewPointer(t), true, nil, "IdemKey")
	_, isFunc := obj.(*types.Func)
	return isFunc
}

// zeroSize reports whether values of t occupy no memory (struct{}, [0]T,
// structs of such): they hold no data.
func zeroSize(t types.Type) bool {
	switch u := t.Underlying().(type) {
	case *types.Struct:
		for i := 0; i < u.NumFields(); i++ {
			if !zeroSize(u.Field(i).Type()) {
				return false
			}
		}
		return true
	case *types.Array:
		return u.Len() == 0 || zeroSize(u.Elem())
	}
	return false
}

// keyMethod is the KeyBuilder method that writes values of a basic type,
// and the type it takes; "" for a type that cannot be keyed.
func keyMethod(u *types.Basic) (string, types.Type) {
	info := u.Info()
	switch {
	case info&types.IsBoolean != 0:
		return "Bool", types.Typ[types.Bool]
	case info&types.IsInteger != 0 && info&types.IsUnsigned != 0:
		return "Uint", types.Typ[types.Uint64]
	case info&types.IsInteger != 0:
		return "Int", types.Typ[types.Int64]
	case info&types.IsFloat != 0:
		return "Float", types.Typ[types.Float64]
	case info&types.IsComplex != 0:
		return "Complex", types.Typ[types.Complex128]
	case info&types.IsString != 0:
		return "String", types.Typ[types.String]
	}
	return "", nil
}

// basicWriter is the idemimpl writer (KeyString…) of the values of a
// predeclared basic type, for KeyPtr; "" for other types.
func basicWriter(t types.Type) string {
	b, ok := types.Unalias(t).(*types.Basic)
	if !ok {
		return ""
	}
	switch m, _ := keyMethod(b); m {
	case "Bool", "Uint", "Int", "Float", "String":
		return "Key" + m
	}
	return ""
}

func isString(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&types.IsString != 0
}

// instanceKey tells instances of one generic type apart: the instance
// fully qualified ("" for a type that is no instance).
func instanceKey(n *types.Named) string {
	if n.TypeArgs().Len() == 0 {
		return ""
	}
	return types.TypeString(n, nil)
}

// mentionsTypeParam reports whether t mentions a type parameter (of the
// function being wrapped): such a type cannot be named at package level,
// so it gets no helper of its own.
func mentionsTypeParam(t types.Type) bool {
	return firstTypeParam(t, map[*types.Named]bool{}) != nil
}

func firstTypeParam(t types.Type, seen map[*types.Named]bool) *types.TypeParam {
	switch t := types.Unalias(t).(type) {
	case *types.TypeParam:
		return t
	case *types.Named:
		for i := 0; i < t.TypeArgs().Len(); i++ {
			if tp := firstTypeParam(t.TypeArgs().At(i), seen); tp != nil {
				return tp
			}
		}
	case *types.Pointer:
		return firstTypeParam(t.Elem(), seen)
	case *types.Slice:
		return firstTypeParam(t.Elem(), seen)
	case *types.Array:
		return firstTypeParam(t.Elem(), seen)
	case *types.Chan:
		return firstTypeParam(t.Elem(), seen)
	case *types.Map:
		if tp := firstTypeParam(t.Key(), seen); tp != nil {
			return tp
		}
		return firstTypeParam(t.Elem(), seen)
	case *types.Struct:
		for i := 0; i < t.NumFields(); i++ {
			if tp := firstTypeParam(t.Field(i).Type(), seen); tp != nil {
				return tp
			}
		}
	case *types.Signature:
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for i := 0; i < tup.Len(); i++ {
				if tp := firstTypeParam(tup.At(i).Type(), seen); tp != nil {
					return tp
				}
			}
		}
	}
	return nil
}

// typeTerms flattens a constraint's type set to its terms: a union (of
// types, or of interfaces that are unions themselves), or a single type.
// ok is false for what it does not compute (an intersection of two
// restricting interfaces); no terms means any type.
func typeTerms(c types.Type) ([]*types.Term, bool) {
	it, isIface := c.Underlying().(*types.Interface)
	if !isIface {
		return []*types.Term{types.NewTerm(false, c)}, true
	}
	var out []*types.Term
	restricted := 0
	for i := 0; i < it.NumEmbeddeds(); i++ {
		var terms []*types.Term
		switch emb := it.EmbeddedType(i).(type) {
		case *types.Union:
			for j := 0; j < emb.Len(); j++ {
				t := emb.Term(j)
				if _, inner := t.Type().Underlying().(*types.Interface); inner {
					sub, ok := typeTerms(t.Type())
					if !ok || len(sub) == 0 {
						return nil, false
					}
					terms = append(terms, sub...)
					continue
				}
				terms = append(terms, t)
			}
		default:
			sub, ok := typeTerms(emb)
			if !ok {
				return nil, false
			}
			terms = sub
		}
		if len(terms) == 0 {
			continue // a method-only interface
		}
		if restricted++; restricted > 1 {
			return nil, false
		}
		out = terms
	}
	return out, true
}

// basicKind is the KeyBuilder method and conversion that write every type
// of terms one to one, "" if there is none.
func basicKind(terms []*types.Term) (method, conv string) {
	for _, t := range terms {
		u, ok := t.Type().Underlying().(*types.Basic)
		if !ok {
			return "", ""
		}
		var m, c string
		switch info := u.Info(); {
		case info&types.IsBoolean != 0:
			m, c = "Bool", "bool"
		case info&types.IsInteger != 0:
			// Signed and unsigned integers both convert to int64 one
			// to one; unsigned ones alone are written as Uint, as their
			// concrete types are.
			m, c = "Uint", "uint64"
			if info&types.IsUnsigned == 0 {
				m, c = "Int", "int64"
			}
		case info&types.IsFloat != 0:
			m, c = "Float", "float64"
		case info&types.IsComplex != 0:
			m, c = "Complex", "complex128"
		case info&types.IsString != 0:
			m, c = "String", "string"
		default:
			return "", ""
		}
		switch {
		case method == "":
			method, conv = m, c
		case method == m:
		case (method == "Int" || method == "Uint") && (m == "Int" || m == "Uint"):
			method, conv = "Int", "int64"
		default:
			return "", ""
		}
	}
	return method, conv
}

// keyedByHelper reports whether write keys a value of t (not excluded)
// by calling the key helper of its type: a named type that no method keys
// and that the generated file can name.
func (pi *pkgInfo) keyedByHelper(t types.Type) (*types.Named, bool) {
	t = types.Unalias(t)
	n, ok := t.(*types.Named)
	if !ok || !pi.hasKeyHelper(n) || !pi.nameable(n.Obj()) || !pi.renderable(n) || mentionsTypeParam(n) {
		return nil, false
	}
	if shapeOf(t).kind != kindPointer && (isNamed(t, "net", "Addr") || pi.keyedByMethod(t)) {
		return nil, false // byMethod
	}
	return n, true
}

// keyedAsMethod reports whether write keys a value of t (not excluded,
// and not by a helper) by a method or as a well-known type (byMethod),
// not by its shape.
func (pi *pkgInfo) keyedAsMethod(t types.Type) bool {
	if shapeOf(t).kind == kindPointer {
		return false
	}
	if isNamed(t, "time", "Time") || isNamed(t, "net", "Addr") || isNamed(t, "math/big", "Float") {
		return true
	}
	return pi.keyedByMethod(t)
}

// idemKeyField is the path of st's exported idempotency key field (named
// IdempotencyKey, any case or underscores), "" if it has none.
func idemKeyField(path string, st *types.Struct) string {
	for i := 0; i < st.NumFields(); i++ {
		f := st.Field(i)
		if f.Exported() && strings.EqualFold(strings.ReplaceAll(f.Name(), "_", ""), "IdempotencyKey") {
			return joinPath(path, f.Name())
		}
	}
	return ""
}

// nameable reports whether the generated file can refer to the type by
// name: declared in the package itself, or exported from a package it may
// import (not another module's internal package).
func (pi *pkgInfo) nameable(obj *types.TypeName) bool {
	pkg := obj.Pkg()
	if pkg == nil || pkg == pi.pkg.Types {
		return true
	}
	if !obj.Exported() {
		return false
	}
	path := pkg.Path()
	var parent string
	switch {
	case strings.HasPrefix(path, "internal/") || path == "internal":
		parent = ""
	case strings.Contains(path, "/internal/"):
		parent = path[:strings.LastIndex(path, "/internal/")]
	case strings.HasSuffix(path, "/internal"):
		parent = strings.TrimSuffix(path, "/internal")
	default:
		return true
	}
	from := pi.pkg.PkgPath
	return parent != "" && (from == parent || strings.HasPrefix(from, parent+"/"))
}

// aliasFor returns an alias the generated file can name that stands for
// n, which it cannot name itself (unexported, or internal to another
// module), with the type arguments to instantiate it with; nil if there
// is none. Aliases of n's own package come first, then by package path
// and name: the same file every run.
func (pi *pkgInfo) aliasFor(n *types.Named) (*types.TypeName, *types.TypeList) {
	if pi.aliases == nil {
		pi.aliases = aliasIndex(pi.pkg.Types)
	}
	for _, a := range pi.aliases[n.Origin().Obj()] {
		if !a.Exported() || !pi.nameable(a) {
			continue
		}
		at := a.Type().(*types.Alias)
		tps := at.TypeParams()
		if tps.Len() == 0 {
			if types.Identical(types.Unalias(at), n) {
				return a, nil
			}
			continue
		}
		// type Page[T any] = page[T]: Page[X] is page[X].
		rhs, ok := at.Rhs().(*types.Named)
		if !ok || rhs.TypeArgs().Len() != tps.Len() || n.TypeArgs().Len() != tps.Len() {
			continue
		}
		same := true
		for i := 0; i < tps.Len(); i++ {
			same = same && rhs.TypeArgs().At(i) == tps.At(i)
		}
		if same {
			return a, n.TypeArgs()
		}
	}
	return nil, nil
}

// aliasIndex lists the aliases of the packages pkg reaches by the origin
// of the named type each stands for.
func aliasIndex(pkg *types.Package) map[*types.TypeName][]*types.TypeName {
	idx := map[*types.TypeName][]*types.TypeName{}
	seen := map[*types.Package]bool{}
	var pkgs []*types.Package
	var walk func(p *types.Package)
	walk = func(p *types.Package) {
		if seen[p] {
			return
		}
		seen[p] = true
		pkgs = append(pkgs, p)
		for _, q := range p.Imports() {
			walk(q)
		}
	}
	walk(pkg)
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].Path() < pkgs[j].Path() })
	for _, p := range pkgs {
		for _, name := range p.Scope().Names() {
			a, ok := p.Scope().Lookup(name).(*types.TypeName)
			if !ok || !a.IsAlias() {
				continue
			}
			if n, ok := types.Unalias(a.Type()).(*types.Named); ok {
				k := n.Origin().Obj()
				idx[k] = append(idx[k], a)
			}
		}
	}
	for k, list := range idx {
		sort.SliceStable(list, func(i, j int) bool { return list[i].Pkg() == k.Pkg() && list[j].Pkg() != k.Pkg() })
	}
	return idx
}
