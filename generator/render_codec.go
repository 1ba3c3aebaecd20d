package generator

import (
	"go/types"
	"strconv"
	"strings"

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

// codecGen writes the codec of one wrapper's result value, or the helpers
// of a type, from what the analysis decided can be stored.
type codecGen struct {
	e    *emitter
	spec string      // the Spec's base name, for helpers specialised by omit=
	last encoderCall // for fieldEnc
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

// variants are the variants of the union n that its codec stores, as the
// analysis decided (fp.variants); a value of another fails the recording.
func (g *codecGen) variants(n *types.Named) []types.Type {
	var out []types.Type
	for _, vt := range g.e.pi.variants(n) {
		if g.e.plan.variants[n][types.TypeString(vt, nil)] {
			out = append(out, vt)
		}
	}
	return out
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

// resultCodec emits the codec of x's result value and sets the Spec's
// Codec field (the Spec is out's first declaration). It returns what the
// wrapper's doc comment says about the record; false after a diagnostic.
func (e *emitter) resultCodec(x *fn, specBase string, resultT jen.Code) (codec jen.Code, doc string, ok bool) {
	if !e.typeParamResults(x, x.what()) {
		return nil, "", false // render_generics.go
	}
	r := &x.plan.resolved
	omits, omitted := r.omits, r.omitted
	if !r.omitOK {
		return nil, "", false
	}
	if len(x.result) == 0 {
		return nil, "", true
	}
	facts := x.plan.codec
	if facts == nil {
		e.pi.d.add(e.pi.fset.Position(x.pos), "internal error: %s has no codec facts from the analysis", x.what())
		return nil, "", false
	}
	if len(facts.problems) > 0 {
		e.reportCodecProblems(x, facts.problems)
		return nil, "", false
	}
	g := &codecGen{e: e, spec: specBase}
	encBody, decBody := g.resultBodies(x, omits)
	codec = g.oneCall(x, omits, resultT)
	if codec == nil {
		encT, decT := e.qual(implPkg, "Encoder"), e.qual(implPkg, "Decoder")
		codec = e.qual(implPkg, "TypedCodec").Index(resultT).Values(jen.Dict{
			jen.Id("Encode"): jen.Func().Params(jen.Id("e").Op("*").Add(encT), jen.Id("v").Op("*").Add(resultT)).Block(encBody...),
			jen.Id("Decode"): jen.Func().Params(jen.Id("d").Op("*").Add(decT), jen.Id("v").Op("*").Add(resultT)).Block(decBody...),
		})
	}
	errTypes := ""
	if e.errs != nil {
		errTypes = e.errs.name
	}
	return codec, facts.recordDoc(omitted, errTypes), true
}

// oneCall is the codec of a single result as one call of idemimpl, for a
// type stored by helpers, a pointer to or a slice of one, or a basic type
// (the bodies written for it do the same); nil for any other.
func (g *codecGen) oneCall(x *fn, omits []omitTree, resultT jen.Code) jen.Code {
	if len(x.result) != 1 {
		return nil
	}
	t, omit := x.result[0], omits[0]
	if _, whole := omit[""]; whole {
		return nil
	}
	impl := func(fn string) *jen.Statement { return g.e.qual(implPkg, fn) }
	if name, ok := g.helperName(t, omit); ok {
		return impl("Codec").Call(jen.Id("idemEnc"+name), jen.Id("idemDec"+name))
	}
	u := types.Unalias(t)
	if b, ok := u.Underlying().(*types.Basic); ok && g.e.pi.storedBy(u) == (storage{}) {
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
	if name, ok := g.helperName(elem, omit); ok {
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
		return g.e.qual(implPkg, m+"Codec").Index(resultT).Call(jen.Lit(bits))
	case "String", "Bool", "Float64":
		return g.e.qual(implPkg, m+"Codec").Index(resultT).Call()
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
		return g.enc(x.result[0], v, omits[0], se), g.dec(x.result[0], v, omits[0], sd)
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
		encBody = append(encBody, g.fieldEnc(f, g.enc(t, fv, omits[i], se))...)
		decBody = append(decBody, g.fieldDec(st, f, func() []jen.Code { return g.dec(t, fv, omits[i], sd) })...)
	}
	encBody = append(encBody, eCall("End", jen.Id(at)))
	return encBody, append(decBody, g.dCall("End", jen.Id(st)))
}

// reportCodecProblems reports the problems of x's result codec, one line
// per omit= that would lift them.
func (e *fileWriter) reportCodecProblems(x *fn, problems []codecProblem) {
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
		what := "result " + strconv.Itoa(l.idx+1)
		if x.stream != nil {
			what += "'s items"
		}
		what += " (" + pi.typeString(x.result[l.idx]) + ")"
		pi.d.add(pi.fset.Position(x.pos), "%s: %s cannot be stored faithfully: %s (add `omit=%s`)", x.what(), what, msg, o)
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

// enc returns the statements that encode v (an addressable expression) of
// type t.
func (g *codecGen) enc(t types.Type, v vx, omit omitTree, s fnScope) []jen.Code {
	if name, ok := g.helperName(t, omit); ok {
		return g.encBy(func(e *jen.Statement) *jen.Statement { return jen.Id("idemEnc"+name).Call(e, v.addr()) })
	}
	t = types.Unalias(t)
	if m := g.e.pi.storedBy(t); m != (storage{}) {
		return g.encMethod(m, v, s)
	}
	return g.encInline(t, v, omit, s)
}

// dec returns the statements that decode into v, as enc encodes it.
func (g *codecGen) dec(t types.Type, v vx, omit omitTree, s fnScope) []jen.Code {
	if name, ok := g.helperName(t, omit); ok {
		return one(jen.Id("idemDec"+name).Call(g.d(), v.addr()))
	}
	t = types.Unalias(t)
	if m := g.e.pi.storedBy(t); m != (storage{}) {
		return g.decMethod(m, t, v, s)
	}
	return g.decInline(t, v, omit, s)
}

// helperName reports whether a value of t is stored by helpers of its
// type's own (a named composite type, or a union, that the generated file
// can name and that brings no marshaling pair), and returns their name
// suffix.
func (g *codecGen) helperName(t types.Type, omit omitTree) (string, bool) {
	n, ok := g.e.pi.codecHelperType(t)
	if !ok {
		return "", false
	}
	return g.helper(n, omit), true
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
