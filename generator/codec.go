package generator

import (
	"fmt"
	"go/types"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/dave/jennifer/jen"
)

// Generated result codecs. Every wrapper's Spec carries an
// idemimpl.TypedCodec of its result value (the result itself, or the
// idemResult struct of several results), built from encode/decode
// functions written here: no reflection, no encoding/json. Named types get
// one pair of helpers each (idemEncT/idemDecT), shared by all wrappers of
// the package, which also makes recursive types work. The format is
// runtime/idem's (wire.go): every value carries its kind, struct fields are
// tagged by name, so added fields decode as zero, removed ones are
// skipped and retyped ones are idem.ErrResultIncompatible.

// omitTree is the omit= paths below one value: a leaf (empty, non-nil)
// leaves the value out.
type omitTree map[string]omitTree

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

// codecGen writes the codec of one wrapper's result value.
type codecGen struct {
	e        *emitter
	problems []codecProblem
	lossy    map[string]bool // other packages' types whose unexported state is not replayed
	// skipped: fields of other packages' structs that cannot be stored and
	// that their package keeps out of its JSON (json:"-"): not stored.
	skipped map[string]bool
	spec    string          // the Spec's base name, for helpers specialised by omit=
	errs    bool            // a value of type error is stored (its type may not be)
	unions  map[string]bool // interfaces stored as unions of their package's types (unions.go)
	last    encoderCall     // for fieldEnc
	// decoders are the uses of d since fieldDec began counting them.
	decoders []*jen.Statement
}

var (
	slicesPkg = types.NewPackage("slices", "slices")
	mapsPkg   = types.NewPackage("maps", "maps")
)

// fnScope hands out the local names of one generated function.
type fnScope map[string]int

func (s fnScope) get(base string) string {
	s[base]++
	if n := s[base]; n > 1 {
		return base + strconv.Itoa(n)
	}
	return base
}

func (g *codecGen) fail(path, msg, root string) {
	g.add(codecProblem{path: path, msg: msg, root: root})
}

func (g *codecGen) add(p codecProblem) {
	for _, q := range g.problems {
		if q == p {
			return // the decoder's pass meets what the encoder's did
		}
	}
	g.problems = append(g.problems, p)
}

// vx is a value in generated code: an addressable expression, or *ptr.
type vx struct {
	x   jen.Code // the expression (ptr == nil)
	ptr jen.Code // v is *ptr
	// bare is ptr without the parentheses a selector needs ((*p).F), for
	// passing the pointer on: f(*p), not f((*p)).
	bare jen.Code
}

// sel is v as the operand of a selector or index: (*p).F needs the parens
// only for indexing; a selector auto-dereferences.
func (v vx) sel(field bool) *jen.Statement {
	if v.ptr != nil {
		if field {
			return jen.Add(v.ptr)
		}
		return jen.Parens(jen.Op("*").Add(v.ptr))
	}
	return jen.Add(v.x)
}

// val is v as an operand or assignment target.
func (v vx) val() *jen.Statement {
	if v.ptr != nil {
		return jen.Op("*").Add(v.ptr)
	}
	return jen.Add(v.x)
}

// addr is &v.
func (v vx) addr() *jen.Statement {
	if v.bare != nil {
		return jen.Add(v.bare)
	}
	if v.ptr != nil {
		return jen.Add(v.ptr)
	}
	return jen.Op("&").Add(v.x)
}

func expr(c jen.Code) vx { return vx{x: c} }

// elem is *v, for v of pointer type.
func (v vx) elem() vx {
	if v.ptr != nil {
		return vx{ptr: jen.Parens(jen.Op("*").Add(v.ptr)), bare: jen.Op("*").Add(v.ptr)}
	}
	return vx{ptr: v.x}
}
func deref(c jen.Code) vx { return vx{ptr: c} }

// advicePath is the path omit= should name for a problem at path: the
// path cut before its first element of a slice, array or map (omit=
// paths go through structs and pointers only).
func advicePath(path string) string {
	if i := strings.Index(path, "[]"); i >= 0 {
		return path[:i]
	}
	return path
}

// resultName is how diagnostics and omit= call result i: its declared
// name, else rN.
func resultName(x *fn, i int) string {
	if n := x.sig.Results().At(i).Name(); n != "" && n != "_" {
		return n
	}
	return "r" + strconv.Itoa(i+1)
}

// resultCodec emits the codec of x's result value and sets the Spec's
// Codec field (the Spec is out's first declaration). It returns what the
// wrapper's doc comment says about the record; false after a diagnostic.
func (e *emitter) resultCodec(x *fn, specBase string, resultT jen.Code) (codec jen.Code, doc string, ok bool) {
	if !e.typeParamResults(x, x.what()) {
		return nil, "", false // generics.go
	}
	r := &x.plan.resolved
	omits, omitted := r.omits, r.omitted
	if !r.omitOK {
		return nil, "", false
	}
	if len(x.result) == 0 {
		return nil, "", true
	}
	g := &codecGen{e: e, lossy: map[string]bool{}, skipped: map[string]bool{}, spec: specBase}
	encBody, decBody := g.resultBodies(x, omits)
	if len(g.problems) > 0 {
		e.reportCodecProblems(x, g.problems)
		return nil, "", false
	}
	codec = g.oneCall(x, omits, resultT)
	if codec == nil {
		encT, decT := e.qual(e.impl, "Encoder"), e.qual(e.impl, "Decoder")
		codec = e.qual(e.impl, "TypedCodec").Index(resultT).Values(jen.Dict{
			jen.Id("Encode"): jen.Func().Params(jen.Id("e").Op("*").Add(encT), jen.Id("v").Op("*").Add(resultT)).Block(encBody...),
			jen.Id("Decode"): jen.Func().Params(jen.Id("d").Op("*").Add(decT), jen.Id("v").Op("*").Add(resultT)).Block(decBody...),
		})
	}
	return codec, g.recordDoc(omitted), true
}

// oneCall is the codec of a single result as one call of idemimpl, for a
// type stored by helpers, a pointer to or a slice of one, or a basic type
// (the bodies written for it do the same); nil for any other.
func (g *codecGen) oneCall(x *fn, omits []omitTree, resultT jen.Code) jen.Code {
	if len(x.result) != 1 {
		return nil
	}
	t, path, omit := x.result[0], resultName(x, 0), omits[0]
	if _, whole := omit[""]; whole {
		return nil
	}
	impl := func(fn string) *jen.Statement { return g.e.qual(g.e.impl, fn) }
	if name, ok := g.helperName(t, path, "", omit); ok {
		return impl("Codec").Call(jen.Id("idemEnc"+name), jen.Id("idemDec"+name))
	}
	u := types.Unalias(t)
	if b, ok := u.Underlying().(*types.Basic); ok && g.storedBy(u) == (storage{}) {
		return g.basicResultCodec(b, resultT)
	}
	var fn string
	var elem types.Type
	switch u := u.(type) {
	case *types.Pointer:
		fn, elem = "PtrCodec", u.Elem()
	case *types.Slice:
		fn, elem = "ListCodec", u.Elem()
	default:
		return nil
	}
	if name, ok := g.helperName(elem, path, "", omit); ok {
		return impl(fn).Call(jen.Id("idemEnc"+name), jen.Id("idemDec"+name))
	}
	if bc := basicCoder(elem); bc != "" {
		return impl(fn).Index(g.e.typ(elem)).Call(impl("Enc"+bc), impl("Dec"+bc))
	}
	return nil
}

// basicResultCodec is the idemimpl codec of results of a basic type
// (IntCodec[T](64)…), nil for the kinds it has none of.
func (g *codecGen) basicResultCodec(b *types.Basic, resultT jen.Code) jen.Code {
	switch m, _, bits := basicCodec(b); m {
	case "Int", "Uint":
		return g.e.qual(g.e.impl, m+"Codec").Index(resultT).Call(jen.Lit(bits))
	case "String", "Bool", "Float64":
		return g.e.qual(g.e.impl, m+"Codec").Index(resultT).Call()
	}
	return nil
}

// resultBodies are the bodies of the codec's Encode and Decode: the
// result itself, or the idemResult struct's fields by position.
func (g *codecGen) resultBodies(x *fn, omits []omitTree) (encBody, decBody []jen.Code) {
	whole := func(i int) bool { _, w := omits[i][""]; return w }
	se, sd := fnScope{"e": 1, "d": 1, "v": 1}, fnScope{"e": 1, "d": 1, "v": 1}
	if len(x.result) == 1 {
		if whole(0) {
			return nil, nil
		}
		v := deref(jen.Id("v"))
		return g.enc(x.result[0], v, resultName(x, 0), "", omits[0], se), g.dec(x.result[0], v, resultName(x, 0), "", omits[0], sd)
	}
	at, st := se.get("at"), sd.get("s")
	encBody = one(jen.Id(at).Op(":=").Add(eCall("Struct")))
	decBody = one(jen.Id(st).Op(":=").Add(g.dCall("Struct")))
	for i, t := range x.result {
		if whole(i) {
			continue
		}
		f := "R" + strconv.Itoa(i+1) // stored by position, whatever the field's name
		fv := expr(jen.Id("v").Dot(x.resultFields[i]))
		encBody = append(encBody, g.fieldEnc(f, g.enc(t, fv, resultName(x, i), "", omits[i], se))...)
		decBody = append(decBody, g.fieldDec(st, f, func() []jen.Code { return g.dec(t, fv, resultName(x, i), "", omits[i], sd) })...)
	}
	encBody = append(encBody, eCall("End", jen.Id(at)))
	return encBody, append(decBody, g.dCall("End", jen.Id(st)))
}

// recordDoc is what the wrapper's doc comment says about the record:
// what it leaves out and how errors and unions replay.
func (g *codecGen) recordDoc(omitted []string) string {
	var doc string
	if len(omitted) > 0 {
		doc += " Not stored (replays return their zero value): " + strings.Join(omitted, ", ") + "."
	}
	if l := g.lossyList(); len(l) > 0 {
		doc += " Replays do not restore the unexported state of " + strings.Join(l, ", ") + "."
	}
	if len(g.skipped) > 0 {
		doc += " Not stored (tagged json:\"-\" by their package): " + strings.Join(slices.Sorted(maps.Keys(g.skipped)), ", ") + "."
	}
	if len(g.unions) > 0 {
		doc += " Values of " + strings.Join(slices.Sorted(maps.Keys(g.unions)), ", ") + " are stored for the types of their package that their codec lists; others fail the recording."
	}
	if g.errs {
		doc += " Errors in results replay as their text and chain, as themselves if " + g.e.errs.name + " lists them."
	}
	return doc
}

// reportCodecProblems reports the problems of x's result codec, one line
// per omit= that would lift them.
func (e *emitter) reportCodecProblems(x *fn, problems []codecProblem) {
	type line struct {
		idx  int
		msgs []string
	}
	byOmit := map[string]*line{}
	var order []string
	inRoot := map[string]int{}
	for _, p := range problems {
		inRoot[p.root]++
	}
	for _, p := range problems {
		// Several problems inside one other package's value (an
		// *http.Response): omit that value. Else the problem's own path.
		omit := advicePath(p.path)
		if p.root != "" && (inRoot[p.root] > 1 || p.cycle) {
			omit = advicePath(p.root)
		}
		root := strings.SplitN(strings.SplitN(p.path, ".", 2)[0], "[", 2)[0]
		idx := 0
		for i := range x.result {
			if resultName(x, i) == root {
				idx = i
			}
		}
		l := byOmit[omit]
		if l == nil {
			l = &line{idx: idx}
			byOmit[omit] = l
			order = append(order, omit)
		}
		l.msgs = append(l.msgs, p.path+": "+p.msg)
	}
	order = mergeCovered(order, func(from, into string) {
		byOmit[into].msgs = append(byOmit[into].msgs, byOmit[from].msgs...)
	})
	pi := e.pi
	for _, o := range order {
		l := byOmit[o]
		msg := l.msgs[0]
		if len(l.msgs) > 1 {
			msg += " (and " + strconv.Itoa(len(l.msgs)-1) + " more)"
		}
		pi.d.add(pi.fset.Position(x.pos), "%s: result %d (%s) cannot be stored faithfully: %s (add `omit=%s`)", x.what(), l.idx+1, pi.typeString(x.result[l.idx]), msg, o)
	}
}

// mergeCovered drops from paths those another path covers, handing each
// to merge with the outermost path that covers it: following every line of
// one run at once then names no path twice and none under another.
func mergeCovered(paths []string, merge func(from, into string)) []string {
	var out []string
	for _, p := range paths {
		outer := p // the shortest path covering p: covered by none
		for _, q := range paths {
			if covers(q, outer) && len(q) < len(outer) {
				outer = q
			}
		}
		if outer == p {
			out = append(out, p)
		} else {
			merge(p, outer)
		}
	}
	return out
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

// enc returns the statements that encode v (an addressable expression) of
// type t. path names v for diagnostics; foreignAt is the path of the
// outermost other package's value on the way, if any.
func (g *codecGen) enc(t types.Type, v vx, path, foreignAt string, omit omitTree, s fnScope) []jen.Code {
	if name, ok := g.helperName(t, path, foreignAt, omit); ok {
		if name == "" {
			return nil
		}
		return g.encBy(func(e *jen.Statement) *jen.Statement { return jen.Id("idemEnc"+name).Call(e, v.addr()) })
	}
	t, ok := g.check(t, path, foreignAt)
	if !ok {
		return nil
	}
	if m := g.storedBy(t); m != (storage{}) {
		return g.encMethod(m, v, s)
	}
	return g.encInline(t, v, path, g.enterNamed(t, path, foreignAt), omit, s)
}

// dec returns the statements that decode into v, as enc encodes it.
func (g *codecGen) dec(t types.Type, v vx, path, foreignAt string, omit omitTree, s fnScope) []jen.Code {
	if name, ok := g.helperName(t, path, foreignAt, omit); ok {
		if name == "" {
			return nil
		}
		return one(jen.Id("idemDec"+name).Call(g.d(), v.addr()))
	}
	t, ok := g.check(t, path, foreignAt)
	if !ok {
		return nil
	}
	if m := g.storedBy(t); m != (storage{}) {
		return g.decMethod(m, t, v, s)
	}
	return g.decInline(t, v, path, g.enterNamed(t, path, foreignAt), omit, s)
}

// helperName reports whether a value of t is stored by helpers of its
// type's own (a named composite type, or a union, that the generated file
// can name and that brings no marshaling pair), and returns their name
// suffix: "" after recording why t cannot be stored.
func (g *codecGen) helperName(t types.Type, path, foreignAt string, omit omitTree) (string, bool) {
	if !g.e.renderable(t) || lossyPair(g.e.pi, types.Unalias(t)) != "" || g.storedBy(types.Unalias(t)) != (storage{}) {
		return "", false
	}
	n, ok := g.hasHelper(types.Unalias(t))
	if !ok {
		return "", false
	}
	g.e.pinAlias(t)
	return g.helper(n, path, g.enterNamed(n, path, foreignAt), omit), true
}

// check refuses the types the generated file cannot name and those whose
// only marshaling pair is lossy; it returns t without its aliases.
func (g *codecGen) check(t types.Type, path, foreignAt string) (types.Type, bool) {
	e, pi := g.e, g.e.pi
	if !e.renderable(t) {
		g.fail(path, "type "+pi.typeString(t)+" cannot be named in the generated file (unexported, or internal to another module)", foreignAt)
		return nil, false
	}
	e.pinAlias(t)
	t = types.Unalias(t)
	if why := lossyPair(pi, t); why != "" {
		g.fail(path, why, foreignAt)
		return nil, false
	}
	return t, true
}

// enterNamed pins a named type's underlying type and returns the path of
// the outermost other package's value, path if t starts one.
func (g *codecGen) enterNamed(t types.Type, path, foreignAt string) string {
	named, ok := t.(*types.Named)
	if !ok {
		return foreignAt
	}
	g.e.pinNamed(named)
	if named.Obj().Pkg() != nil && named.Obj().Pkg() != g.e.pi.pkg.Types && foreignAt == "" {
		return path
	}
	return foreignAt
}

// hasHelper reports whether t is stored by helpers of its own: a named
// composite type, or an interface stored as a union.
func (g *codecGen) hasHelper(t types.Type) (*types.Named, bool) {
	named, ok := t.(*types.Named)
	if !ok {
		return nil, false
	}
	switch shapeOf(t).kind {
	case kindStruct, kindSlice, kindMap, kindArray, kindPointer:
		return named, true
	case kindInterface:
		return named, len(g.e.variants(named)) > 0
	}
	return nil, false
}

// lossyPair says why t is refused: a standard library type whose only way
// to be stored is a marshaling pair that does not give back the value it
// was given; "" for any other type.
func lossyPair(pi *pkgInfo, t types.Type) string {
	switch {
	case isNamed(t, "regexp", "Regexp"):
		return "regexp.Regexp's MarshalText drops CompilePOSIX and Longest (return the expression's source instead)"
	case isNamed(t, "crypto/sha3", "SHA3"), isNamed(t, "crypto/sha3", "SHAKE"):
		return pi.typeString(t) + "'s UnmarshalBinary takes only the state of the function its receiver was made for, which a stored record does not say (return the sum instead)"
	}
	return ""
}

// storage is how a value is stored by methods rather than by its shape:
// a url.Userinfo by its accessors, a protobuf message, a marshaling pair.
type storage struct {
	userinfo, proto    bool
	marshal, unmarshal string
}

// storedBy is how t is stored by methods; zero if it is not.
func (g *codecGen) storedBy(t types.Type) storage {
	if isNamed(t, "net/url", "Userinfo") {
		return storage{userinfo: true}
	}
	if shapeOf(t).kind == kindPointer || types.IsInterface(t) {
		return storage{}
	}
	// protobuf messages: *M has ProtoReflect.
	if pm, ptr := implements(t, g.e.pi.types.protoMessage); pm && ptr {
		return storage{proto: true}
	}
	if m, u, ok := g.pair(t); ok {
		return storage{marshal: m, unmarshal: u}
	}
	return storage{}
}

func (g *codecGen) encMethod(m storage, v vx, s fnScope) []jen.Code {
	switch {
	case m.userinfo:
		return g.encUserinfo(v, s)
	case m.proto:
		opts := g.e.qual(protoPkg, "MarshalOptions").Values(jen.Dict{jen.Id("Deterministic"): jen.True()})
		return g.encCall("Marshaled", opts.Dot("Marshal").Call(v.addr()))
	}
	return g.encCall("Marshaled", v.sel(true).Dot(m.marshal).Call())
}

func (g *codecGen) decMethod(m storage, t types.Type, v vx, s fnScope) []jen.Code {
	switch {
	case m.userinfo:
		return g.decUserinfo(v, s)
	case m.proto:
		return one(g.dCall("Unmarshaled", g.e.qual(protoPkg, "Unmarshal").Call(g.dCall("Marshaled"), v.addr())))
	case isNamed(t, "crypto/x509", "OID"):
		// The zero OID marshals to no bytes, which UnmarshalBinary
		// refuses: no bytes stay the zero OID.
		b := s.get("b")
		return one(jen.If(jen.Id(b).Op(":=").Add(g.dCall("Marshaled")), jen.Len(jen.Id(b)).Op(">").Lit(0)).Block(
			g.dCall("Unmarshaled", v.sel(true).Dot(m.unmarshal).Call(jen.Id(b)))))
	}
	return one(g.dCall("Unmarshaled", v.sel(true).Dot(m.unmarshal).Call(g.dCall("Marshaled"))))
}

// encCall is a value encoded by one Encoder call, e.m(args...): a struct
// field's name chains onto it (fieldEnc).
func (g *codecGen) encCall(m string, args ...jen.Code) []jen.Code {
	return g.encBy(func(e *jen.Statement) *jen.Statement { return e.Dot(m).Call(args...) })
}

// encBy is a value encoded by one call on the Encoder: call(e). Field
// returns the Encoder, so a struct field's name takes e's place (fieldEnc).
func (g *codecGen) encBy(call func(e *jen.Statement) *jen.Statement) []jen.Code {
	g.last = encoderCall{stmt: call(jen.Id("e")), call: call}
	return one(g.last.stmt)
}

// encoderCall is the statement encBy wrote last, and how to write it on
// another Encoder expression.
type encoderCall struct {
	stmt *jen.Statement
	call func(e *jen.Statement) *jen.Statement
}

// fieldEnc is a struct field's name, then the code of its value: one line
// when that is one call on the Encoder, e.Field("ID").String(v.ID) or
// idemEncMoney(e.Field("Total"), &v.Total).
func (g *codecGen) fieldEnc(name string, code []jen.Code) []jen.Code {
	if len(code) == 1 && g.last.stmt != nil && code[0] == jen.Code(g.last.stmt) {
		return one(g.last.call(eCall("Field", jen.Lit(name))))
	}
	return append(one(eCall("Field", jen.Lit(name))), code...)
}

// eCall and dCall call a method of the Encoder e and the Decoder d.
func eCall(m string, args ...jen.Code) *jen.Statement { return jen.Id("e").Dot(m).Call(args...) }
func (g *codecGen) dCall(m string, args ...jen.Code) *jen.Statement {
	return g.d().Dot(m).Call(args...)
}

// d is the Decoder d, as the code that reads a value names it. Each use
// is remembered, so that a struct field read by one statement that uses d
// once can look its field up in place of d (fieldDec).
func (g *codecGen) d() *jen.Statement {
	d := jen.Id("d")
	g.decoders = append(g.decoders, d)
	return d
}

// encUserinfo stores a url.Userinfo (no exported fields) by what its
// accessors return.
func (g *codecGen) encUserinfo(v vx, s fnScope) []jen.Code {
	at, pw, set := s.get("at"), s.get("pw"), s.get("set")
	return []jen.Code{
		jen.Id(at).Op(":=").Add(eCall("Struct")),
		eCall("Field", jen.Lit("Username")).Dot("String").Call(v.sel(true).Dot("Username").Call()),
		jen.If(jen.List(jen.Id(pw), jen.Id(set)).Op(":=").Add(v.sel(true)).Dot("Password").Call(), jen.Id(set)).Block(
			eCall("Field", jen.Lit("Password")).Dot("String").Call(jen.Id(pw))),
		eCall("End", jen.Id(at)),
	}
}

// decUserinfo rebuilds a url.Userinfo with url.User or url.UserPassword:
// a password set to "" stays set, an unset one stays unset.
func (g *codecGen) decUserinfo(v vx, s fnScope) []jen.Code {
	st, name, pw := s.get("s"), s.get("name"), s.get("pw")
	return []jen.Code{
		jen.Id(st).Op(":=").Add(g.dCall("Struct")),
		jen.Id(name).Op(":=").Add(g.dCall("Field", jen.Id(st), jen.Lit("Username"))).Dot("String").Call(),
		jen.Var().Id(pw).Op("*").String(),
		jen.If(g.dCall("Field", jen.Id(st), jen.Lit("Password")).Dot("Present").Call()).Block(
			jen.Id(pw).Op("=").New(jen.String()), jen.Op("*").Id(pw).Op("=").Add(g.dCall("String"))),
		g.dCall("End", jen.Id(st)),
		jen.If(jen.Id(pw).Op("!=").Nil()).Block(
			v.val().Op("=").Op("*").Add(g.e.qual(urlPkg, "UserPassword")).Call(jen.Id(name), jen.Op("*").Id(pw)),
		).Else().Block(
			v.val().Op("=").Op("*").Add(g.e.qual(urlPkg, "User")).Call(jen.Id(name))),
	}
}

var urlPkg = types.NewPackage("net/url", "url")

// pairs are the marshaling method pairs a type may bring, in order of
// preference; a few standard library types are stored otherwise (see
// lossyPair and the cases below).
func (g *codecGen) pair(t types.Type) (marshal, unmarshal string, ok bool) {
	switch {
	case isNamed(t, "encoding/json", "RawMessage"), isNamed(t, "net", "IP"):
		// Their pairs turn nil into null (RawMessage) and empty into nil
		// (both), and a 4-byte net.IP into 16 bytes: stored as the bytes
		// they are.
		return "", "", false
	case isNamed(t, "net/url", "URL"):
		// url.Parse normalises what MarshalBinary (String) writes: a
		// scheme's case, a path's leading slash, RawPath. Stored by its
		// fields, the user info by its accessors (userinfo).
		return "", "", false
	case isNamed(t, "math/big", "Float"):
		// MarshalText writes the shortest decimal and UnmarshalText parses
		// it at 64 bits; the gob pair keeps the precision, rounding mode,
		// accuracy and every mantissa bit.
		return "GobEncode", "GobDecode", true
	}
	w := g.e.pi.types
	for _, p := range []struct {
		m, u *types.Interface
		mn   string
		un   string
	}{
		{w.binaryMarshaler, w.binaryUnmarshaler, "MarshalBinary", "UnmarshalBinary"},
		{w.jsonMarshaler, w.jsonUnmarshaler, "MarshalJSON", "UnmarshalJSON"},
		{w.textMarshaler, w.textUnmarshaler, "MarshalText", "UnmarshalText"},
	} {
		// implements counts a type's own methods only: a pair promoted
		// from an embedded field marshals that field alone.
		if m, _ := implements(t, p.m); m {
			if u, _ := implements(t, p.u); u {
				return p.mn, p.un, true
			}
		}
	}
	return "", "", false
}

// helper makes (once) the helpers of a named type and returns their name
// suffix; "" if the type cannot be stored (problems are recorded).
func (g *codecGen) helper(n *types.Named, path, foreignAt string, omit omitTree) string {
	key := types.TypeString(n, nil) // instances of a generic type differ
	if len(omit) > 0 {
		key += " for " + g.spec + " omitting " + fmt.Sprint(omit) // fmt sorts map keys
	}
	h, ok := g.e.codecHelpers[key]
	switch {
	case !ok:
		h = g.buildHelper(n, key, omit)
	case h.building:
		h.recursive = true // the type reaches itself
	}
	if h.problems != nil {
		g.lift(h, path, foreignAt)
		return ""
	}
	for l := range h.lossy {
		g.lossy[l] = true
	}
	for f := range h.skipped {
		g.skipped[f] = true
	}
	g.errs = g.errs || h.errs
	g.addUnions(h.unions)
	return h.name
}

// buildHelper writes idemEncN and idemDecN, or records in the helper
// returned why n cannot be stored.
func (g *codecGen) buildHelper(n *types.Named, key string, omit omitTree) *codecHelper {
	e := g.e
	base := n.Obj().Name() + e.instanceSuffix(n)
	if n.Obj().Pkg() != e.pi.pkg.Types {
		base = upperFirst(n.Obj().Pkg().Name()) + base
	}
	if len(omit) > 0 {
		base += "For" + g.spec
	}
	name := e.global("idemEnc" + base)[len("idemEnc"):]
	e.globals["idemDec"+name] = true
	h := &codecHelper{name: name, building: true}
	e.codecHelpers[key] = h // recursion finds it
	mark := len(e.helperDecls)
	sub := &codecGen{e: e, lossy: map[string]bool{}, skipped: map[string]bool{}, spec: g.spec}
	// Paths inside the helper are relative; foreignAt "" at the root of an
	// own type, or the root itself of another package's.
	root := ""
	if n.Obj().Pkg() != e.pi.pkg.Types {
		root = "\x00" // inside another package's type: advise omitting its root
	}
	self := deref(jen.Id("v"))
	encBody := sub.encInline(n, self, "", root, omit, fnScope{"e": 1, "d": 1, "v": 1})
	decBody := sub.decInline(n, self, "", root, omit, fnScope{"e": 1, "d": 1, "v": 1})
	h.building = false
	if len(sub.problems) > 0 {
		h.problems = sub.problems
		e.rollback(mark) // as for key helpers
		return h
	}
	h.lossy, h.skipped, h.errs, h.unions = sub.lossy, sub.skipped, sub.errs, sub.unions
	if h.recursive {
		// A value of a recursive type can nest without end (a cycle) or,
		// in a corrupt record, deeper than the stack holds: bound it.
		encBody = append(depthGuard("e"), encBody...)
		decBody = append(depthGuard("d"), decBody...)
	}
	e.readFields(n)
	tt := e.typ(n)
	e.helperDecls = append(e.helperDecls,
		helperDecl{name: "idemEnc" + name, code: jen.Func().Id("idemEnc"+name).Params(jen.Id("e").Op("*").Add(e.qual(e.impl, "Encoder")), jen.Id("v").Op("*").Add(tt)).Block(encBody...)},
		helperDecl{name: "idemDec" + name, code: jen.Func().Id("idemDec"+name).Params(jen.Id("d").Op("*").Add(e.qual(e.impl, "Decoder")), jen.Id("v").Op("*").Add(tt)).Block(decBody...)},
	)
	return h
}

// depthGuard bounds the nesting of a recursive type's values in the
// helper of builder, encoder or decoder x.
func depthGuard(x string) []jen.Code {
	return []jen.Code{
		jen.If(jen.Op("!").Id(x).Dot("Enter").Call()).Block(jen.Return()),
		jen.Defer().Id(x).Dot("Leave").Call(),
	}
}

// lift records the problems of helper h, reached at path, as problems of
// g. Their root is the outermost other package's value (foreignAt), else
// the root they had inside the helper, else this value when its type is
// recursive: advice must name a value the recursion cannot reach past.
func (g *codecGen) lift(h *codecHelper, path, foreignAt string) {
	for _, p := range h.problems {
		q := codecProblem{path: relJoin(path, p.path), msg: p.msg, cycle: p.cycle || h.recursive}
		switch {
		case foreignAt != "":
			q.root = foreignAt
		case strings.HasPrefix(p.root, "\x00"):
			q.root = relJoin(path, p.root[1:])
		case p.root != "":
			q.root = relJoin(path, p.root)
		case h.recursive:
			q.root = path
		}
		g.add(q)
	}
}

type codecHelper struct {
	name string
	// building: the helper's body is being generated; a use of the
	// helper meanwhile makes it recursive (its bodies guard the depth).
	building, recursive bool
	problems            []codecProblem // relative paths
	lossy, skipped      map[string]bool
	errs                bool
	unions              map[string]bool
}

// encInline encodes v by its type's shape (a named type's helper body).
func (g *codecGen) encInline(t types.Type, v vx, path, foreignAt string, omit omitTree, s fnScope) []jen.Code {
	sh := shapeOf(t)
	if !g.storableShape(t, sh, path, foreignAt) {
		return nil
	}
	switch sh.kind {
	case kindBasic:
		m, to, _ := basicCodec(sh.basic)
		return g.encCall(m, convert(t, to, v.val()))
	case kindPointer:
		if name, ok := g.helperName(sh.elem, path, foreignAt, omit); ok {
			return g.encCombinator("EncPtr", v, jen.Id("idemEnc"+name), name != "")
		}
		if bc := basicCoder(sh.elem); bc != "" {
			return g.encCombinator("EncPtr", v, g.e.qual(g.e.impl, "Enc"+bc), true)
		}
		inner := g.enc(sh.elem, v.elem(), path, foreignAt, omit, s)
		return one(jen.If(v.val().Op("==").Nil()).Block(eCall("Nil")).Else().Block(append(one(eCall("Ptr")), inner...)...))
	case kindSlice:
		return g.encSlice(t, sh.elem, v, path, foreignAt, s)
	case kindArray:
		i, at := s.get("i"), s.get("at")
		inner := g.enc(sh.elem, expr(v.sel(false).Index(jen.Id(i))), path+"[]", foreignAt, nil, s)
		return []jen.Code{
			jen.Id(at).Op(":=").Add(eCall("List", jen.Len(v.val()))),
			rangeOver(i, v.val(), inner),
			eCall("End", jen.Id(at)),
		}
	case kindMap:
		return g.encMap(sh, v, path, foreignAt, s)
	case kindStruct:
		return g.encStruct(t, sh.strct, v, path, foreignAt, omit, s)
	case kindInterface:
		if types.Identical(t, errorType) {
			g.errs = true
			return g.encCall("Error", v.val(), g.e.errorTypes())
		}
		if n, ok := t.(*types.Named); ok && len(g.e.variants(n)) > 0 {
			return g.encUnion(n, g.e.variants(n), v, path, foreignAt, s)
		}
		return g.encCall("Any", v.val())
	}
	return nil
}

// decInline decodes into v as encInline encodes it.
func (g *codecGen) decInline(t types.Type, v vx, path, foreignAt string, omit omitTree, s fnScope) []jen.Code {
	sh := shapeOf(t)
	if !g.storableShape(t, sh, path, foreignAt) {
		return nil
	}
	switch sh.kind {
	case kindBasic:
		m, from, bits := basicCodec(sh.basic)
		var args []jen.Code
		if bits > 0 {
			args = one(jen.Lit(bits))
		}
		return one(v.val().Op("=").Add(g.convertBack(t, from, g.dCall(m, args...))))
	case kindPointer:
		if name, ok := g.helperName(sh.elem, path, foreignAt, omit); ok {
			return g.combinator(name, "DecPtr", g.d(), v.addr(), "idemDec")
		}
		if bc := basicCoder(sh.elem); bc != "" {
			return one(g.e.qual(g.e.impl, "DecPtr").Call(g.d(), v.addr(), g.e.qual(g.e.impl, "Dec"+bc)))
		}
		inner := g.dec(sh.elem, v.elem(), path, foreignAt, omit, s)
		return one(jen.If(g.dCall("Ptr")).Block(
			append(one(v.val().Op("=").New(g.e.typ(sh.elem))), inner...)...).Else().Block(v.val().Op("=").Nil()))
	case kindSlice:
		return g.decSlice(t, sh.elem, v, path, foreignAt, s)
	case kindArray:
		i := s.get("i")
		inner := g.dec(sh.elem, expr(v.sel(false).Index(jen.Id(i))), path+"[]", foreignAt, nil, s)
		return one(jen.If(g.dCall("Array", jen.Len(v.val()))).Block(rangeOver(i, v.val(), inner)))
	case kindMap:
		return g.decMap(t, sh, v, path, foreignAt, s)
	case kindStruct:
		return g.decStruct(t, sh.strct, v, path, foreignAt, omit, s)
	case kindInterface:
		if types.Identical(t, errorType) {
			g.errs = true
			return one(v.val().Op("=").Add(g.dCall("Error", g.e.errorTypes())))
		}
		if n, ok := t.(*types.Named); ok && len(g.e.variants(n)) > 0 {
			return g.decUnion(n, g.e.variants(n), v, path, foreignAt, s)
		}
		return one(v.val().Op("=").Add(g.dCall("Any")))
	}
	return nil
}

// storableShape refuses, with a problem at path, the shapes no codec
// stores: funcs, channels, maps of other keys than strings and numbers,
// interfaces other than error, any and unions. Errors are stored by their
// text and chain, and the known error types as themselves (errtypes.go);
// an any with its dynamic type where that is one the runtime restores
// exactly (what encoding/json decodes into an any, basic types).
func (g *codecGen) storableShape(t types.Type, sh shape, path, foreignAt string) bool {
	pi := g.e.pi
	switch sh.kind {
	case kindBasic:
		if m, _, _ := basicCodec(sh.basic); m == "" {
			g.fail(path, sh.basic.String()+" cannot be stored", foreignAt)
			return false
		}
	case kindPointer, kindSlice, kindArray, kindStruct:
	case kindMap:
		if kb, ok := sh.key.Underlying().(*types.Basic); !ok || kb.Info()&types.IsOrdered == 0 {
			g.fail(path, "map key "+pi.typeString(sh.key)+" is not a string or a number (only those keys are stored, in sorted order)", foreignAt)
			return false
		}
	case kindInterface:
		n, named := t.(*types.Named)
		if !types.Identical(t, errorType) && !(named && len(g.e.variants(n)) > 0) && !sh.iface.Empty() {
			g.fail(path, "interface "+pi.typeString(t)+" cannot be decoded to its dynamic type", foreignAt)
			return false
		}
	case kindFunc:
		g.fail(path, "func values cannot be stored", foreignAt)
		return false
	case kindChan:
		g.fail(path, "channels cannot be stored", foreignAt)
		return false
	default:
		g.fail(path, "type "+pi.typeString(t)+" cannot be stored", foreignAt)
		return false
	}
	return true
}

// basicCodec is the Encoder and Decoder method of a basic type, the type
// they take and return, and the bits the Decoder checks a number against
// (0: none); "" for a type that is not stored.
func basicCodec(u *types.Basic) (method, typ string, bits int) {
	bits = 64
	switch u.Kind() {
	case types.Int8, types.Uint8:
		bits = 8
	case types.Int16, types.Uint16:
		bits = 16
	case types.Int32, types.Uint32:
		bits = 32
	}
	info := u.Info()
	switch {
	case u.Kind() == types.Bool:
		return "Bool", "bool", 0
	case info&types.IsString != 0:
		return "String", "string", 0
	case info&types.IsUnsigned != 0:
		return "Uint", "uint64", bits
	case info&types.IsInteger != 0:
		return "Int", "int64", bits
	case u.Kind() == types.Float32:
		return "Float32", "float32", 0
	case info&types.IsFloat != 0:
		return "Float64", "float64", 0
	case info&types.IsComplex != 0:
		return "Complex", "complex128", 0
	}
	return "", "", 0
}

// convert converts x of type t to the basic type to, unless it is one.
func convert(t types.Type, to string, x *jen.Statement) jen.Code {
	if b, ok := t.(*types.Basic); ok && b.Name() == to {
		return x
	}
	return jen.Id(to).Call(x)
}

// convertBack converts x of the basic type from to t, unless it is one.
func (g *codecGen) convertBack(t types.Type, from string, x jen.Code) jen.Code {
	if b, ok := t.(*types.Basic); ok && b.Name() == from {
		return x
	}
	return jen.Add(g.e.typ(t)).Call(x)
}

// encSlice: Nil, or the elements (bytes at once).
func (g *codecGen) encSlice(t, elem types.Type, v vx, path, foreignAt string, s fnScope) []jen.Code {
	switch {
	case isNamed(t, "net", "IP"):
		// Builds before stored a net.IP by its MarshalText, as bytes
		// too: a non-nil one goes behind a pointer marker, so such a
		// record is ErrResultIncompatible, never text read as an
		// address.
		return one(jen.If(v.val().Op("==").Nil()).Block(eCall("Nil")).Else().Block(eCall("Ptr"), eCall("Bytes", v.val())))
	case isByte(elem) && types.Identical(t, byteSlice):
		return g.encCall("Bytes", v.val())
	case isByte(elem):
		return g.encCall("Bytes", jen.Index().Byte().Call(v.val()))
	}
	if name, ok := g.helperName(elem, path+"[]", foreignAt, nil); ok {
		return g.encCombinator("EncList", v, jen.Id("idemEnc"+name), name != "")
	}
	if bc := basicCoder(elem); bc != "" {
		return g.encCombinator("EncList", v, g.e.qual(g.e.impl, "Enc"+bc), true)
	}
	i, at := s.get("i"), s.get("at")
	inner := g.enc(elem, expr(v.sel(false).Index(jen.Id(i))), path+"[]", foreignAt, nil, s)
	return one(jen.If(v.val().Op("==").Nil()).Block(eCall("Nil")).Else().Block(
		jen.Id(at).Op(":=").Add(eCall("List", jen.Len(v.val()))),
		rangeOver(i, v.val(), inner),
		eCall("End", jen.Id(at))))
}

// decSlice decodes as encSlice encodes.
func (g *codecGen) decSlice(t, elem types.Type, v vx, path, foreignAt string, s fnScope) []jen.Code {
	switch {
	case isNamed(t, "net", "IP"):
		return one(jen.If(g.dCall("Ptr")).Block(v.val().Op("=").Add(g.dCall("Bytes"))).Else().Block(v.val().Op("=").Nil()))
	case isByte(elem) && types.Identical(t, byteSlice):
		return one(v.val().Op("=").Add(g.dCall("Bytes")))
	case isByte(elem):
		return one(v.val().Op("=").Add(g.e.typ(t)).Call(g.dCall("Bytes")))
	}
	if name, ok := g.helperName(elem, path+"[]", foreignAt, nil); ok {
		return g.combinator(name, "DecList", g.d(), v.addr(), "idemDec")
	}
	if bc := basicCoder(elem); bc != "" {
		return one(g.e.qual(g.e.impl, "DecList").Call(g.d(), v.addr(), g.e.qual(g.e.impl, "Dec"+bc)))
	}
	i := s.get("i")
	inner := g.dec(elem, expr(v.sel(false).Index(jen.Id(i))), path+"[]", foreignAt, nil, s)
	return []jen.Code{g.e.qual(g.e.impl, "DecListHead").Call(g.d(), v.addr()), rangeOver(i, v.val(), inner)}
}

// combinator calls the idemimpl combinator fn over x with the helper
// prefix+name of its elements; nothing when they cannot be stored.
func (g *codecGen) combinator(name, fn string, coder, x jen.Code, prefix string) []jen.Code {
	if name == "" {
		return nil
	}
	return one(g.e.qual(g.e.impl, fn).Call(coder, x, jen.Id(prefix+name)))
}

// encCombinator encodes v with idemimpl's fn (EncPtr, EncList) and the
// elements' encoder enc; nothing if there is none (ok false: the element
// type cannot be stored, which is reported).
func (g *codecGen) encCombinator(fn string, v vx, enc jen.Code, ok bool) []jen.Code {
	if !ok {
		return nil
	}
	return g.encBy(func(e *jen.Statement) *jen.Statement { return g.e.qual(g.e.impl, fn).Call(e, v.val(), enc) })
}

// orderedCoder is basicCoder for the keys of EncMap, which sorts them:
// strings and float64s.
func orderedCoder(t types.Type) string {
	if c := basicCoder(t); c != "Bool" {
		return c
	}
	return ""
}

// basicCoder names the idemimpl encoder and decoder (EncString and
// DecString…) of the values of a predeclared basic type, for EncPtr and
// EncList; "" for other types, and for integers, whose decoders take the
// bits a number must fit in.
func basicCoder(t types.Type) string {
	b, ok := types.Unalias(t).(*types.Basic)
	if !ok {
		return ""
	}
	switch m, _, _ := basicCodec(b); m {
	case "String", "Bool", "Float64":
		return m
	}
	return ""
}

// isByte: the element type of []byte, not of a named byte type's slice.
func isByte(t types.Type) bool {
	b, ok := t.(*types.Basic)
	return ok && b.Kind() == types.Byte
}

// encMap: Nil, or the entries in key order.
func (g *codecGen) encMap(sh shape, v vx, path, foreignAt string, s fnScope) []jen.Code {
	if kc, xc := orderedCoder(sh.key), basicCoder(sh.elem); kc != "" && xc != "" {
		enc := func(m string) jen.Code { return jen.Parens(jen.Op("*").Add(g.e.qual(g.e.impl, "Encoder"))).Dot(m) }
		return g.encBy(func(e *jen.Statement) *jen.Statement {
			return g.e.qual(g.e.impl, "EncMap").Call(e, v.val(), enc(kc), enc(xc))
		})
	}
	k, x, at := s.get("k"), s.get("x"), s.get("at")
	kc := g.enc(sh.key, expr(jen.Id(k)), path+"[]", foreignAt, nil, s)
	xc := g.enc(sh.elem, expr(jen.Id(x)), path+"[]", foreignAt, nil, s)
	body := kc
	if uses(xc, x) { // an element of an empty struct writes nothing of it
		body = append([]jen.Code{jen.Id(x).Op(":=").Add(v.sel(false)).Index(jen.Id(k))}, kc...)
	}
	body = append(body, xc...)
	e := g.e
	return one(jen.If(v.val().Op("==").Nil()).Block(eCall("Nil")).Else().Block(
		jen.Id(at).Op(":=").Add(eCall("Map", jen.Len(v.val()))),
		jen.Commentf("sorted: the same value always has the same bytes"),
		jen.For(jen.List(jen.Id("_"), jen.Id(k)).Op(":=").Range().Add(e.qual(slicesPkg, "Sorted")).Call(e.qual(mapsPkg, "Keys").Call(v.val()))).Block(body...),
		eCall("End", jen.Id(at))))
}

// decMap decodes as encMap encodes.
func (g *codecGen) decMap(t types.Type, sh shape, v vx, path, foreignAt string, s fnScope) []jen.Code {
	if kc, xc := orderedCoder(sh.key), basicCoder(sh.elem); kc != "" && xc != "" {
		dec := func(m string) jen.Code { return jen.Parens(jen.Op("*").Add(g.e.qual(g.e.impl, "Decoder"))).Dot(m) }
		return one(g.e.qual(g.e.impl, "DecMap").Call(g.d(), v.addr(), dec(kc), dec(xc)))
	}
	k, x, n := s.get("k"), s.get("x"), s.get("n")
	kc := g.dec(sh.key, expr(jen.Id(k)), path+"[]", foreignAt, nil, s)
	xc := g.dec(sh.elem, expr(jen.Id(x)), path+"[]", foreignAt, nil, s)
	body := []jen.Code{jen.Var().Id(k).Add(g.e.typ(sh.key)), jen.Var().Id(x).Add(g.e.typ(sh.elem))}
	body = append(body, kc...)
	body = append(body, xc...)
	body = append(body, v.sel(false).Index(jen.Id(k)).Op("=").Id(x))
	return one(jen.If(g.dCall("Nil")).Block(v.val().Op("=").Nil()).Else().Block(
		jen.Id(n).Op(":=").Add(g.dCall("Map")),
		v.val().Op("=").Make(g.e.typ(t), jen.Id(n)),
		jen.For(jen.Range().Id(n)).Block(body...)))
}

// encStruct: the stored fields, each by name.
func (g *codecGen) encStruct(t types.Type, u *types.Struct, v vx, path, foreignAt string, omit omitTree, s fnScope) []jen.Code {
	at := s.get("at")
	out := one(jen.Id(at).Op(":=").Add(eCall("Struct")))
	ok := g.eachField(t, u, path, foreignAt, omit, func(f *types.Var, fp string, sub omitTree) {
		out = append(out, g.fieldEnc(f.Name(), g.enc(f.Type(), expr(v.sel(true).Dot(f.Name())), fp, foreignAt, sub, s))...)
	})
	if !ok {
		return nil
	}
	return append(out, eCall("End", jen.Id(at)))
}

// decStruct decodes the fields by name: a missing one (added since the
// record was written) stays zero, an unknown one (removed since) is
// skipped.
func (g *codecGen) decStruct(t types.Type, u *types.Struct, v vx, path, foreignAt string, omit omitTree, s fnScope) []jen.Code {
	st := s.get("s") // before the fields' decoders name theirs
	out := one(jen.Id(st).Op(":=").Add(g.dCall("Struct")))
	ok := g.eachField(t, u, path, foreignAt, omit, func(f *types.Var, fp string, sub omitTree) {
		out = append(out, g.fieldDec(st, f.Name(), func() []jen.Code {
			return g.dec(f.Type(), expr(v.sel(true).Dot(f.Name())), fp, foreignAt, sub, s)
		})...)
	})
	if !ok {
		return nil
	}
	return append(out, g.dCall("End", jen.Id(st)))
}

// fieldDec is the lookup of the field name of the struct st, then the
// code of its value: one line when that is one statement using d once,
// which the lookup takes the place of: v.ID = d.Field(s, "ID").String()
// or idemDecMoney(d.Field(s, "Total"), &v.Total).
func (g *codecGen) fieldDec(st, name string, value func() []jen.Code) []jen.Code {
	outer := g.decoders
	g.decoders = nil
	code := value()
	uses := g.decoders
	g.decoders = outer
	lookup := g.dCall("Field", jen.Id(st), jen.Lit(name))
	g.decoders = append(g.decoders, uses...)
	if len(code) == 1 && len(uses) == 1 {
		(*uses[0])[0] = lookup // d itself, the first token of its statement
		return code
	}
	return append(one(lookup), code...)
}

// eachField calls store for each field of struct u (of type t) that is
// stored, and records why the others are not; false if the struct cannot
// be stored at all.
func (g *codecGen) eachField(t types.Type, u *types.Struct, path, foreignAt string, omit omitTree, store func(f *types.Var, fp string, sub omitTree)) bool {
	pi := g.e.pi
	own := true
	if nt, ok := t.(*types.Named); ok && nt.Obj().Pkg() != pi.pkg.Types {
		own = false
	}
	exported := 0
	for i := 0; i < u.NumFields(); i++ {
		f := u.Field(i)
		sub, omitted := omit[f.Name()]
		if omitted && len(sub) == 0 {
			if f.Exported() {
				exported++ // left out by name, on the doc line: not lost silently
			}
			continue
		}
		if g.unstored(t, u, i, own, path, sub) {
			continue
		}
		exported++
		store(f, joinPath(path, f.Name()), sub)
	}
	if !own && exported == 0 && g.lossy[pi.typeString(t)] {
		g.fail(path, pi.typeString(t)+" has no exported fields: all its state would be lost on replay", foreignAt)
		return false
	}
	return true
}

// unstored reports whether field i of struct u is left out of the
// record (recording why) or refused (recording a problem).
func (g *codecGen) unstored(t types.Type, u *types.Struct, i int, own bool, path string, sub omitTree) bool {
	pi := g.e.pi
	f := u.Field(i)
	switch {
	case f.Exported() && g.opaque(f.Type()) && len(sub) == 0:
		// Another package's state held by value, none of it
		// exported (an AWS output's ResultMetadata): replays hold
		// its zero value, which is usable, and the doc line names
		// the type. A result that is such a value is still refused.
		g.lossy[pi.typeString(f.Type())] = true
		return true
	case !own && f.Exported() && jsonSkipped(u.Tag(i)) && !storable(f.Type()):
		g.skipped[pi.typeString(t)+"."+f.Name()] = true
		return true
	case f.Exported():
		return false
	case f.Name() == "_" || zeroSize(f.Type()):
		return true
	case !own:
		g.lossy[pi.typeString(t)] = true
		return true
	case !(f.Embedded() && isStruct(f.Type())):
		g.fail(joinPath(path, f.Name()), "unexported field (export it, or give the type a marshaling pair)", "")
		return true
	}
	return false
}

// lossyList is the sorted list of types that lose unexported state.
func (g *codecGen) lossyList() []string {
	var l []string
	for t := range g.lossy {
		l = append(l, t)
	}
	sort.Strings(l)
	return l
}

// rangeOver is a loop over the indexes i of v running body, or over
// v's length when body does not index (elements of empty structs).
func rangeOver(i string, v jen.Code, body []jen.Code) *jen.Statement {
	if !uses(body, i) {
		return jen.For(jen.Range().Add(v)).Block(body...)
	}
	return jen.For(jen.Id(i).Op(":=").Range().Add(v)).Block(body...)
}

// uses reports whether the generated code mentions the identifier id.
func uses(code []jen.Code, id string) bool {
	return slices.Contains(strings.FieldsFunc(fmt.Sprintf("%#v", jen.Block(code...)), func(r rune) bool {
		return r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}), id)
}

// opaque reports whether t is another package's struct held by value
// whose data is all unexported and that has no marshaling pair: no
// codec can store any of it.
func (g *codecGen) opaque(t types.Type) bool {
	n, ok := t.(*types.Named)
	if !ok || n.Obj().Pkg() == nil || n.Obj().Pkg() == g.e.pi.pkg.Types {
		return false
	}
	st, ok := n.Underlying().(*types.Struct)
	if !ok {
		return false
	}
	if _, _, ok := g.pair(t); ok || lossyPair(g.e.pi, t) != "" {
		return false
	}
	data := false
	for i := 0; i < st.NumFields(); i++ {
		f := st.Field(i)
		if f.Name() == "_" || zeroSize(f.Type()) {
			continue
		}
		if f.Exported() {
			return false
		}
		data = true
	}
	return data
}

// jsonSkipped reports whether a struct tag keeps its field out of the
// type's JSON form (json:"-").
func jsonSkipped(tag string) bool {
	return reflect.StructTag(tag).Get("json") == "-"
}

// storable is false for the types no codec can rebuild from bytes: an
// interface (its dynamic type is not in the record), a func or a channel,
// or a pointer to one. Another package's struct field of such a type
// that the package tags json:"-" (stripe's Error.Err, say) is left out
// of the stored result instead of refusing the whole result: its own
// package keeps it out of its wire form too.
func storable(t types.Type) bool {
	for {
		p, ok := t.Underlying().(*types.Pointer)
		if !ok {
			break
		}
		t = p.Elem()
	}
	switch t.Underlying().(type) {
	case *types.Interface, *types.Signature, *types.Chan:
		return false
	}
	return true
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
