package generator

import (
	"fmt"
	"go/token"
	"go/types"
	"reflect"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"
)

// val is a Go expression of the value being keyed. ptr says the expression
// is a non-nil pointer to the value (helpers take *T, so large structs are
// not copied); every value the generated code keys is addressable.
type val struct {
	e   func() *jen.Statement
	ptr bool
	// bare is e without the parentheses that field and method access
	// need ((*p).F), for uses that do not (passing p on, *p).
	bare func() *jen.Statement
}

func (v val) unparen() *jen.Statement {
	if v.bare != nil {
		return v.bare()
	}
	return v.e()
}

func (v val) value() *jen.Statement {
	if v.ptr {
		return jen.Op("*").Add(v.unparen())
	}
	return v.e()
}

// index is v[i] for a slice value.
func (v val) index(i string) *jen.Statement {
	if v.ptr {
		return jen.Parens(v.value()).Index(jen.Id(i))
	}
	return v.e().Index(jen.Id(i))
}

func (v val) addr() *jen.Statement {
	if v.ptr {
		return v.unparen()
	}
	return jen.Op("&").Add(v.e())
}

// field selects a field; Go dereferences the pointer itself.
func (v val) field(name string) val {
	return val{e: func() *jen.Statement { return v.e().Dot(name) }}
}

func id(name string) func() *jen.Statement {
	return func() *jen.Statement { return jen.Id(name) }
}

// namer hands out local names that do not collide with the names in use.
type namer map[string]bool

func (n namer) get(base string) string {
	name := base
	for i := 2; n[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	n[name] = true
	return name
}

// expr is the Go expression of the path in x's wrapper, up to its field
// upto.
func (kp keyPath) expr(x *fn, upto int) *jen.Statement {
	var s *jen.Statement
	if kp.recvField != "" {
		s = jen.Id(x.recvVar).Dot(kp.recvField)
	} else {
		s = jen.Id(x.params[kp.param].name)
	}
	for _, f := range kp.fields[:upto] {
		s = s.Dot(f)
	}
	return s
}

// value is the path's value in the begin helper, where a struct or array
// parameter is a pointer to it (the path's fields read through it).
func (kp keyPath) value(x *fn) val {
	if kp.recvField == "" && len(kp.fields) == 0 && x.params[kp.param].byPtr {
		return val{e: id(x.params[kp.param].name), ptr: true}
	}
	return val{e: func() *jen.Statement { return kp.expr(x, len(kp.fields)) }}
}

// guard is the condition under which a pointer on the path is nil (nil if
// there is none).
func (kp keyPath) guard(x *fn) jen.Code {
	var conds []jen.Code
	for i, n := range kp.nilable {
		if n {
			conds = append(conds, kp.expr(x, i).Op("==").Nil())
		}
	}
	if len(conds) == 0 {
		return nil
	}
	return jen.Add(conds[0]).Add(orRest(conds[1:])...)
}

func orRest(cs []jen.Code) []jen.Code {
	var out []jen.Code
	for _, c := range cs {
		out = append(out, jen.Op("||"), c)
	}
	return out
}

// writer is what write needs to know about the current key path.
type writer struct {
	e *emitter
	b func() *jen.Statement // the *idemimpl.KeyBuilder
	n namer
	// raw is the named type whose helper is being written: write it by its
	// underlying type (its own checks were done by the caller).
	raw types.Type
	// inlining holds the named types being written inline (no helper).
	inlining map[*types.Named]bool
	// tagged are the fields left out by their idem:"-" tag, named on the
	// helper's doc comment.
	tagged []string
	// lenient: the payload fingerprint under key=, which skips the
	// unexported fields of another package's struct that carries its own
	// IdempotencyKey (an SDK's common params; named on the doc line)
	// instead of refusing them: the key= paths decide identity.
	lenient bool
	// payload: the helpers this writes are the payload's (lenient ones
	// where the strict one fails); the same as lenient, but where a
	// value is only tried (zeroSizeField), which is strict.
	payload bool
}

// refused is what write returns for a value that cannot be keyed: no
// code. Why is the analysis's to say (reach.key, funcPlan.keys), in the
// same words; render reports that.
func refused() ([]jen.Code, bool) { return nil, false }

// write returns the statements writing v (of type t, at path) into the
// builder; false when t cannot be keyed. ex, when non-nil, lists fields
// to skip: the value is then expanded inline.
func (w *writer) write(v val, t types.Type, path string, ex exTree, variadic bool) ([]jen.Code, bool) {
	t = types.Unalias(t)
	if tp, ok := t.(*types.TypeParam); ok {
		return w.typeParam(v, tp, path) // render_generics.go
	}
	raw := w.raw != nil && t == w.raw
	w.raw = nil
	if ex == nil && !raw {
		if oldKeyer(t, w.e.pi.types.keyer) {
			return refused()
		}
		if n, ok := w.e.pi.keyedByHelper(t); ok {
			name, ok := w.helperName(n)
			if !ok {
				return nil, false
			}
			return one(jen.Id(name).Call(w.b(), v.addr())), true
		}
		if code, ok := w.byMethod(v, t); ok {
			return code, true
		}
		if n, ok := t.(*types.Named); ok && w.e.pi.hasKeyHelper(n) {
			// A type the generated file cannot name (unexported, or
			// in an internal package it cannot import, or an
			// instance of a generic type with a type parameter of
			// the function as an argument) is written inline,
			// which cannot recurse.
			if w.inlining[n.Origin()] {
				return refused() // a recursive type the file cannot name
			}
			if w.inlining == nil {
				w.inlining = map[*types.Named]bool{}
			}
			w.inlining[n.Origin()] = true
			defer delete(w.inlining, n.Origin())
		}
	}
	s := shapeOf(t)
	switch s.kind {
	case kindBasic:
		return w.basic(v, t, s.basic, path)
	case kindPointer:
		return w.writePointer(v, s.elem, path, ex)
	case kindSlice:
		return w.writeSlice(v, s.elem, path, variadic)
	case kindArray:
		return w.writeArray(v, s, path)
	case kindMap:
		return w.writeMap(v, s, path)
	case kindStruct:
		return w.writeStruct(v, t, s.strct, path, ex)
	case kindInterface:
		return w.writeInterface(v, t, s.iface, path)
	}
	return refused() // funcs, channels
}

// byMethod writes the well-known types and those whose key material a
// method writes (idem.Keyer, protobuf messages, marshalers); false for
// any other type. Which types those are is the analysis's question
// (keyedAsMethod): the drift walk asks it too.
func (w *writer) byMethod(v val, t types.Type) ([]jen.Code, bool) {
	if !w.e.pi.keyedAsMethod(t) {
		return nil, false
	}
	wk, b := w.e.pi.types, w.b
	switch {
	case isNamed(t, "time", "Time"):
		return one(b().Dot("Time").Call(v.value())), true
	case isNamed(t, "net", "Addr"):
		// An address is its network and its string form
		// ("tcp", "192.0.2.1:25"), as net.Addr defines it.
		recv := v.e
		if v.ptr { // a *net.Addr: its methods are the interface's
			recv = func() *jen.Statement { return jen.Parens(v.value()) }
		}
		return w.nilCheck(v, []jen.Code{b().Dot("String").Call(recv().Dot("Network").Call()), b().Dot("String").Call(recv().Dot("String").Call())}), true
	}
	if ok, ptr := implements(t, wk.keyer); ok {
		if ptr {
			return one(b().Dot("Key").Call(v.addr())), true
		}
		return w.nilIface(t, v, b().Dot("Key").Call(v.value())), true
	}
	if ok, ptr := implements(t, wk.protoMessage); ok {
		return w.protoMessage(v, t, ptr), true
	}
	if isNamed(t, "math/big", "Float") {
		// Its MarshalText is the shortest decimal at its own
		// precision: 0.1 at 53 and at 64 bits would share a key.
		// The 'p' text is the exact value.
		return one(b().Dot("String").Call(v.e().Dot("Text").Call(jen.LitRune('p'), jen.Lit(0)))), true
	}
	if ok, _ := implements(t, wk.binaryMarshaler); ok {
		return w.nilIface(t, v, b().Dot("Marshaled").Call(v.e().Dot("MarshalBinary").Call())), true
	}
	if ok, _ := implements(t, wk.textMarshaler); ok {
		return w.nilIface(t, v, b().Dot("Marshaled").Call(v.e().Dot("MarshalText").Call())), true
	}
	return nil, false
}

// protoMessage writes a protobuf message (of pointer type if ptr) by its
// deterministic encoding: map entries sorted, so equal messages of one
// binary marshal to equal bytes.
func (w *writer) protoMessage(v val, t types.Type, ptr bool) []jen.Code {
	b := w.b
	opts := w.e.qual(protoPkg, "MarshalOptions").Values(jen.Dict{jen.Id("Deterministic"): jen.True()})
	arg := v.value()
	if ptr {
		arg = v.addr()
	}
	marshal := b().Dot("Marshaled").Call(opts.Dot("Marshal").Call(arg))
	if types.IsInterface(t) {
		// The static type does not fix the message type: the
		// full name goes first, or two types with the same
		// bytes would share a key.
		name := b().Dot("String").Call(jen.String().Call(v.value().Dot("ProtoReflect").Call().Dot("Descriptor").Call().Dot("FullName").Call()))
		return w.nilCheck(v, []jen.Code{name, marshal})
	}
	return one(marshal)
}

// helperName is the name of n's key helper; false when it cannot be
// written (the plan says why).
func (w *writer) helperName(n *types.Named) (string, bool) {
	name, f, _ := w.e.helper(n, w.payload)
	return name, f != nil && f.problems == nil
}

// writePointer: Nil, or Ptr and the element.
func (w *writer) writePointer(v val, elemT types.Type, path string, ex exTree) ([]jen.Code, bool) {
	if bw := basicWriter(elemT); bw != "" {
		return one(w.e.qual(implPkg, "KeyPtr").Call(w.b(), v.value(), w.e.qual(implPkg, bw))), true
	}
	if n, ok := w.e.pi.keyedByHelper(elemT); ok && ex == nil {
		name, ok := w.helperName(n)
		if !ok {
			return nil, false
		}
		return one(w.e.qual(implPkg, "KeyPtr").Call(w.b(), v.value(), jen.Id(name))), true
	}
	elem := val{e: v.e, ptr: true}
	if v.ptr {
		elem = val{e: func() *jen.Statement { return jen.Parens(v.value()) }, ptr: true, bare: v.value}
	}
	inner, ok := w.write(elem, elemT, path, ex, false)
	if !ok {
		return nil, false
	}
	return one(jen.If(v.value().Op("==").Nil()).Block(w.b().Dot("Nil").Call()).Else().Block(append(one(w.b().Dot("Ptr").Call()), inner...)...)), true
}

// writeSlice: Nil, or the length and the elements (bytes at once). Other
// loops than KeyList's are written out: a combinator that hands each
// element to a writer by pointer through a func value is not inlined, so
// a slice the caller holds on its stack would move to the heap. KeyListHead
// reads only the slice's length, which moves nothing.
func (w *writer) writeSlice(v val, elemT types.Type, path string, variadic bool) ([]jen.Code, bool) {
	b := w.b
	if types.Identical(elemT, types.Typ[types.Byte]) {
		if variadic {
			return one(b().Dot("Bytes").Call(v.value())), true
		}
		return w.nilCheck(v, one(b().Dot("Bytes").Call(v.value()))), true
	}
	if vw := w.valueWriter(elemT); vw != nil && !variadic { // a variadic one has no Nil
		return one(w.e.qual(implPkg, "KeyList").Call(b(), v.value(), vw)), true
	}
	i := w.n.get("i")
	elem := val{e: func() *jen.Statement { return v.index(i) }}
	inner, ok := w.write(elem, elemT, path+"[i]", nil, false)
	delete(w.n, i) // a sibling loop may use the name again
	if !ok {
		return nil, false
	}
	// A nil slice is Nil, other slices List and the length (nil and empty
	// variadic arguments are the same call: List); the loop writes no
	// element of a nil slice.
	head := w.e.qual(implPkg, "KeyListHead").Call(b(), v.value())
	if variadic {
		head = b().Dot("List").Call(jen.Len(v.value()))
	}
	body := one(head)
	if len(inner) > 0 { // elements that write nothing need no loop
		body = append(body, jen.For(loopVar(inner, i).Range().Add(v.value())).Block(inner...))
	}
	return body, true
}

// writeArray: the length and the elements (bytes at once).
func (w *writer) writeArray(v val, s shape, path string) ([]jen.Code, bool) {
	b := w.b
	if types.Identical(s.elem, types.Typ[types.Byte]) {
		return one(b().Dot("Bytes").Call(v.e().Index(jen.Op(":")))), true
	}
	i := w.n.get("i")
	elem := val{e: func() *jen.Statement { return v.e().Index(jen.Id(i)) }}
	inner, ok := w.write(elem, s.elem, path+"[i]", nil, false)
	delete(w.n, i)
	if !ok {
		return nil, false
	}
	body := []jen.Code{b().Dot("List").Call(jen.Lit(int(s.len)))}
	if len(inner) > 0 {
		body = append(body, jen.For(loopVar(inner, i).Range().Add(v.e())).Block(inner...))
	}
	return body, true
}

// writeMap: Nil, or the entries, which the builder sorts.
func (w *writer) writeMap(v val, s shape, path string) ([]jen.Code, bool) {
	b := w.b
	if kw, vw := w.valueWriter(s.key), w.valueWriter(s.elem); kw != nil && vw != nil {
		return one(w.e.qual(implPkg, "KeyMap").Call(b(), v.value(), kw, vw)), true
	}
	k, x := w.n.get("k"), w.n.get("e")
	ks, kok := w.write(val{e: id(k)}, s.key, path+"[key]", nil, false)
	xs, xok := w.write(val{e: id(x)}, s.elem, path+"[value]", nil, false)
	delete(w.n, k)
	delete(w.n, x)
	if !kok || !xok {
		return nil, false
	}
	loop := append(append(one(b().Dot("MapEntry").Call()), ks...), xs...)
	// A key or value that writes nothing (all its fields idem:"-")
	// declares no variable: Go rejects an unused one.
	kv, xv := jen.Id(k), jen.Id(x)
	if len(ks) == 0 {
		kv = jen.Id("_")
	}
	var vars jen.Code = jen.List(kv, xv).Op(":=")
	switch {
	case len(xs) == 0 && len(ks) == 0:
		vars = jen.Null()
	case len(xs) == 0:
		vars = jen.Add(kv).Op(":=")
	}
	return w.nilCheck(v, []jen.Code{
		b().Dot("MapStart").Call(jen.Len(v.value())),
		jen.For(jen.Add(vars).Range().Add(v.value())).Block(loop...),
		b().Dot("MapEnd").Call(),
	}), true
}

// writeStruct writes the fields in order, going on past unkeyable ones
// so one run reports them all.
func (w *writer) writeStruct(v val, t types.Type, u *types.Struct, path string, ex exTree) ([]jen.Code, bool) {
	var out []jen.Code
	good := true
	for i := 0; i < u.NumFields(); i++ {
		f := u.Field(i)
		if f.Name() == "_" {
			continue
		}
		if reflect.StructTag(u.Tag(i)).Get("idem") == "-" {
			w.tagged = append(w.tagged, f.Name())
			continue
		}
		sub, inEx := ex[f.Name()]
		if inEx && len(sub) == 0 {
			continue // excluded
		}
		fp := joinPath(path, f.Name())
		if w.e.pi.types.isContext(f.Type()) {
			// A request's context (an SDK's Params.Context) says how
			// long to wait, not which call this is.
			continue
		}
		if !f.Exported() && f.Pkg() != w.e.pi.pkg.Types {
			if !w.foreignField(t, u, i, path) {
				good = false
			}
			continue
		}
		if zeroSize(f.Type()) {
			out = append(out, w.zeroSizeField(v, f, fp, sub)...)
			continue
		}
		s, ok := w.write(v.field(f.Name()), f.Type(), fp, sub, false)
		if !ok {
			good = false
			continue
		}
		out = append(out, s...)
	}
	if !good {
		return nil, false
	}
	return out, true
}

// zeroSizeField writes a field with no data. It cannot tell two calls
// apart, so it needs no key material and is skipped, never refused. An
// empty struct wrote nothing before either; a [0]T of a keyable T, and a
// type with a key method, are written as before (an empty list, the
// method's bytes) so keys do not change for code that generated before.
func (w *writer) zeroSizeField(v val, f *types.Var, fp string, sub exTree) []jen.Code {
	if _, isStruct := f.Type().Underlying().(*types.Struct); isStruct && !w.e.pi.keyedByMethod(f.Type()) {
		return nil
	}
	strict := &writer{e: w.e, b: w.b, n: w.n, inlining: w.inlining, payload: w.payload}
	if !w.e.plan.keyTried(f.Type(), strict.mode()) {
		return nil
	}
	s, ok := strict.write(v.field(f.Name()), f.Type(), fp, sub, false)
	if !ok {
		w.e.triedWrongly(f.Type())
		return nil
	}
	return s
}

// mode is how w writes (filePlan.keyTries).
func (w *writer) mode() keyMode { return keyMode{w.lenient, w.payload} }

// triedWrongly reports a value the analysis found can be keyed and the
// writer cannot write.
func (e *emitter) triedWrongly(t types.Type) {
	e.pi.d.add(token.Position{Filename: e.pi.out}, "internal error: a value of %s cannot be keyed, which the analysis did not decide", types.TypeString(t, nil))
}

// foreignField handles field i of struct u, an unexported field of
// another package's type t, which the generated code cannot read: true
// when it is left out, false when it is refused.
func (w *writer) foreignField(t types.Type, u *types.Struct, i int, path string) bool {
	return zeroSize(u.Field(i).Type()) || w.e.pi.foreignSkipped(t, u, i, path, w.lenient) != ""
}

// writeInterface writes a union's variant, or an any's dynamic type and
// value; other interfaces are refused.
func (w *writer) writeInterface(v val, t types.Type, u *types.Interface, path string) ([]jen.Code, bool) {
	if n, ok := t.(*types.Named); ok {
		if vs := w.e.pi.variants(n); len(vs) > 0 {
			if code, ok := w.keyUnion(n, vs, v); ok {
				return code, true
			}
			return refused() // no variant can be keyed
		}
	}
	if u.Empty() {
		// any: keyed by its dynamic type and value at run time; a
		// dynamic type that cannot be keyed is ErrInvalidKey then.
		return one(w.b().Dot("Any").Call(v.value())), true
	}
	return refused()
}

// typeParam writes a value of a type parameter, through its constraint:
// a key method every type argument has (idem.Keyer, then MarshalBinary,
// then MarshalText), else a type set whose types are all of one basic
// kind (~string; ~int | ~int64: integers of any width and sign convert
// to int64 one to one, and the type argument in the key keeps the types
// apart), else a single type. Anything else is refused; in the payload
// fingerprint under key= it is skipped, and the doc line says so.
func (w *writer) typeParam(v val, tp *types.TypeParam, path string) ([]jen.Code, bool) {
	wk := w.e.pi.types
	b := w.b
	// A type argument may be an interface or a pointer type: its nil
	// value is a value of its own, written as the nil marker as for a
	// concrete type, never a key method called on nil.
	byMethod := func(call jen.Code) []jen.Code {
		return one(jen.If(w.e.qual(implPkg, "IsNil").Call(v.value())).Block(b().Dot("Nil").Call()).Else().Block(call))
	}
	switch {
	case wk.keyer != nil && types.Implements(tp, wk.keyer):
		return byMethod(b().Dot("Key").Call(v.value())), true
	case types.Implements(tp, wk.binaryMarshaler):
		return byMethod(b().Dot("Marshaled").Call(v.e().Dot("MarshalBinary").Call())), true
	case types.Implements(tp, wk.textMarshaler):
		return byMethod(b().Dot("Marshaled").Call(v.e().Dot("MarshalText").Call())), true
	}
	if terms, ok := typeTerms(tp.Constraint()); ok && len(terms) > 0 {
		if method, conv := basicKind(terms); method != "" {
			return one(b().Dot(method).Call(jen.Id(conv).Call(v.value()))), true
		}
		if len(terms) == 1 && !terms[0].Tilde() && w.e.pi.renderable(terms[0].Type()) {
			t := terms[0].Type()
			local := w.n.get("tv")
			inner, ok := w.write(val{e: id(local)}, t, path, nil, false)
			if !ok {
				return nil, false
			}
			return append(one(jen.Id(local).Op(":=").Add(w.e.typ(t)).Call(v.value())), inner...), true
		}
	}
	if w.lenient {
		return nil, true // left out of the payload (typeParamSkipped)
	}
	return refused()
}

// loopVar declares the index i of a loop over body, or nothing when body
// does not index with it (elements whose key material is constant, such
// as [1]struct{ F int `idem:"-"` }, write only their length): Go rejects
// an unused variable.
func loopVar(body []jen.Code, i string) *jen.Statement {
	if strings.Contains(fmt.Sprintf("%#v", jen.Block(body...)), "["+i+"]") {
		return jen.Id(i).Op(":=")
	}
	return jen.Null()
}

// nilCheck writes Nil for a nil pointer, slice or map, else body.
func (w *writer) nilCheck(v val, body []jen.Code) []jen.Code {
	return one(jen.If(v.value().Op("==").Nil()).Block(w.b().Dot("Nil").Call()).Else().Block(body...))
}

// nilIface guards a method call on an interface value against nil, and
// keeps a nil slice or map with a marshaler (net.IP) apart from an empty
// one, which marshal alike.
func (w *writer) nilIface(t types.Type, v val, call jen.Code) []jen.Code {
	switch t.Underlying().(type) {
	case *types.Slice, *types.Map:
		return w.nilCheck(v, one(call))
	}
	if types.IsInterface(t) {
		return w.nilCheck(v, one(call))
	}
	return one(call)
}

func (w *writer) basic(v val, t types.Type, u *types.Basic, path string) ([]jen.Code, bool) {
	method, target := keyMethod(u)
	if method == "" {
		return refused()
	}
	x := v.value()
	if !types.Identical(t, target) {
		x = jen.Id(target.(*types.Basic).Name()).Call(x)
	}
	return one(w.b().Dot(method).Call(x)), true
}

// valueWriter is the idemimpl writer by value (StringKey…) of the values
// of a predeclared basic type, for KeyList and KeyMap; nil for other
// types. The analysis pins t if it is an alias (reach.keyShape), as for
// KeyPtr's.
func (w *writer) valueWriter(t types.Type) jen.Code {
	bw := basicWriter(t)
	if bw == "" {
		return nil
	}
	return w.e.qual(implPkg, strings.TrimPrefix(bw, "Key")+"Key")
}

// helper returns the name of the key function of named type n, as the
// plan names it, and the analysis's facts of it (fp.keyFacts), writing it
// on first use if the plan says it can be written; "" if not. Recursive
// types work: it counts as written before its body is.
func (e *emitter) helper(n *types.Named, lenient bool) (string, *keyFacts, helperKey) {
	obj := n.Obj()
	if lenient {
		// A payload helper is the key helper when that one can be
		// written: a lenient twin only where they differ.
		if name, f, k := e.helper(n, false); f != nil && f.problems == nil {
			return name, f, k
		}
	}
	hk := helperKey{obj, lenient, instanceKey(n)}
	f, typ := e.plan.keyFacts[hk], types.TypeString(n, nil)
	if f == nil || f.problems != nil {
		return "", f, hk
	}
	name := e.plan.helper(keyKind(hk), typ).Name
	if name == "" {
		e.pi.d.add(token.Position{Filename: e.pi.out}, "internal error: the key helper of %s is not in the plan", typ)
		return "", f, hk
	}
	if e.keysWritten[hk] {
		return name, f, hk
	}
	e.keysWritten[hk] = true
	w := &writer{e: e, b: id("b"), n: namer{"b": true, "v": true}, raw: n, lenient: lenient, payload: lenient}
	body, ok := w.write(val{e: id("v"), ptr: true}, n, root, nil, false)
	if !ok {
		e.pi.d.add(token.Position{Filename: e.pi.out}, "internal error: the key helper of %s cannot be written, which the analysis did not decide", typ)
	}
	if e.plan.helper(keyKind(hk), typ).Recursive {
		// A value of a recursive type can nest without end (a cycle):
		// bound it, so a cycle is ErrInvalidKey, not a stack overflow.
		body = append(depthGuard("b"), body...)
	}
	// The name says what the helper does; a doc line says only what it
	// leaves out, which a reviewer must see.
	decl := jen.Null()
	if len(w.tagged) > 0 {
		decl = jen.Commentf("%s writes the key material of %s. Not keyed (tagged idem:\"-\"): %s.", name, e.pi.typeString(n), strings.Join(w.tagged, ", ")).Line()
	}
	decl.Func().Id(name).Params(jen.Id("b").Op("*").Add(e.qual(implPkg, "KeyBuilder")), jen.Id("v").Op("*").Add(e.typ(n))).Block(body...)
	e.helperDecls = append(e.helperDecls, helperDecl{name: name, code: decl})
	return name, f, hk
}

// keyUnion writes the key material of v, a value of the union n: the
// dynamic type's name, then the value, for each variant the analysis
// found can be keyed (filePlan.keyTries); another dynamic type is
// ErrInvalidKey when the call starts.
func (w *writer) keyUnion(n *types.Named, vs []types.Type, v val) ([]jen.Code, bool) {
	b := w.b
	x := w.n.get("x")
	defer delete(w.n, x)
	var cases []jen.Code
	usesX := false
	for _, vt := range vs {
		if !w.e.plan.keyTried(vt, w.mode()) {
			continue // not keyable: a value of it is ErrInvalidKey
		}
		tw := &writer{e: w.e, b: w.b, n: w.n, inlining: w.inlining, lenient: w.lenient, payload: w.payload}
		code, ok := tw.write(val{e: id(x)}, vt, "", nil, false)
		if !ok {
			w.e.triedWrongly(vt)
			continue
		}
		usesX = usesX || uses(code, x)
		cases = append(cases, jen.Case(w.e.typ(vt)).Block(append([]jen.Code{b().Dot("String").Call(jen.Lit(typeName(vt)))}, code...)...))
	}
	if len(cases) == 0 {
		return nil, false
	}
	operand := v.value()
	if v.ptr {
		operand = jen.Parens(operand)
	}
	sw := jen.Switch(operand.Clone().Assert(jen.Type()))
	if usesX {
		sw = jen.Switch(jen.Id(x).Op(":=").Add(operand).Assert(jen.Type()))
	}
	cases = append([]jen.Code{jen.Case(jen.Nil()).Block(b().Dot("Nil").Call())}, cases...)
	cases = append(cases, jen.Default().Block(b().Dot("NotVariant").Call(jen.Lit(w.e.pi.typeString(n)), v.value())))
	return one(sw.Block(cases...)), true
}
