package generator

import (
	"fmt"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"unicode"

	"github.com/dave/jennifer/jen"
)

// helper writes (once) the helpers of a named type, as the plan names
// them, and returns their name suffix. The analysis decided that they can
// be written (the values render walks have no problems: resultCodec).
func (g *codecGen) helper(n *types.Named, omit omitTree) string {
	e := g.e
	key := codecHelperKey(n, g.spec, omit)
	plan := e.plan.helper(codecKind(key), key)
	if plan.Name == "" {
		e.pi.d.add(token.Position{Filename: e.pi.out}, "internal error: the codec helper of %s is not in the plan as written", key)
		return ""
	}
	if !e.codecWritten[key] {
		e.codecWritten[key] = true // a use while it is written: the type reaches itself
		g.writeHelper(n, plan, omit)
	}
	return strings.TrimPrefix(plan.Name, "idemEnc")
}

// writeHelper writes plan's idemEncT and idemDecT, the codec helpers of n.
func (g *codecGen) writeHelper(n *types.Named, plan helperPlan, omit omitTree) {
	e := g.e
	sub := &codecGen{e: e, spec: g.spec}
	self := deref(jen.Id("v"))
	encBody := sub.encInline(n, self, omit, fnScope{"e": 1, "d": 1, "v": 1})
	decBody := sub.decInline(n, self, omit, fnScope{"e": 1, "d": 1, "v": 1})
	if plan.Recursive {
		// A value of a recursive type can nest without end (a cycle) or,
		// in a corrupt record, deeper than the stack holds: bound it.
		encBody = append(depthGuard("e"), encBody...)
		decBody = append(depthGuard("d"), decBody...)
	}
	enc, dec := plan.Name, decoderOf(plan.Name)
	tt := e.typ(n)
	e.helperDecls = append(e.helperDecls,
		helperDecl{name: enc, code: jen.Func().Id(enc).Params(jen.Id("e").Op("*").Add(e.qual(implPkg, "Encoder")), jen.Id("v").Op("*").Add(tt)).Block(encBody...)},
		helperDecl{name: dec, code: jen.Func().Id(dec).Params(jen.Id("d").Op("*").Add(e.qual(implPkg, "Decoder")), jen.Id("v").Op("*").Add(tt)).Block(decBody...)},
	)
}

// depthGuard bounds the nesting of a recursive type's values in the
// helper of builder, encoder or decoder x.
func depthGuard(x string) []jen.Code {
	return []jen.Code{
		jen.If(jen.Op("!").Id(x).Dot("Enter").Call()).Block(jen.Return()),
		jen.Defer().Id(x).Dot("Leave").Call(),
	}
}

// encInline encodes v by its type's shape (a named type's helper body).
func (g *codecGen) encInline(t types.Type, v vx, omit omitTree, s fnScope) []jen.Code {
	sh := shapeOf(t)
	switch sh.kind {
	case kindBasic:
		m, to, _ := basicCodec(sh.basic)
		return g.encCall(m, convert(t, to, v.val()))
	case kindPointer:
		if name, ok := g.helperName(sh.elem, omit); ok {
			return g.encCombinator("EncPtr", v, jen.Id("idemEnc"+name), name != "")
		}
		if bc := basicCoder(sh.elem); bc != "" {
			return g.encCombinator("EncPtr", v, g.e.qual(implPkg, "Enc"+bc), true)
		}
		inner := g.enc(sh.elem, v.elem(), omit, s)
		return one(jen.If(v.val().Op("==").Nil()).Block(eCall("Nil")).Else().Block(append(one(eCall("Ptr")), inner...)...))
	case kindSlice:
		return g.encSlice(t, sh.elem, v, s)
	case kindArray:
		i, at := s.get("i"), s.get("at")
		inner := g.enc(sh.elem, expr(v.sel(false).Index(jen.Id(i))), nil, s)
		return []jen.Code{
			jen.Id(at).Op(":=").Add(eCall("List", jen.Len(v.val()))),
			rangeOver(i, v.val(), inner),
			eCall("End", jen.Id(at)),
		}
	case kindMap:
		return g.encMap(sh, v, s)
	case kindStruct:
		return g.encStruct(t, sh.strct, v, omit, s)
	case kindInterface:
		if types.Identical(t, errorType) {
			return g.encCall("Error", v.val(), g.e.errorTypes())
		}
		if n, ok := t.(*types.Named); ok && len(g.e.pi.variants(n)) > 0 {
			return g.encUnion(n, v, s)
		}
		return g.encCall("Any", v.val())
	}
	return nil
}

// decInline decodes into v as encInline encodes it.
func (g *codecGen) decInline(t types.Type, v vx, omit omitTree, s fnScope) []jen.Code {
	sh := shapeOf(t)
	switch sh.kind {
	case kindBasic:
		m, from, bits := basicCodec(sh.basic)
		var args []jen.Code
		if bits > 0 {
			args = one(jen.Lit(bits))
		}
		return one(v.val().Op("=").Add(g.convertBack(t, from, g.dCall(m, args...))))
	case kindPointer:
		if name, ok := g.helperName(sh.elem, omit); ok {
			return g.combinator(name, "DecPtr", g.d(), v.addr(), "idemDec")
		}
		if bc := basicCoder(sh.elem); bc != "" {
			return one(g.e.qual(implPkg, "DecPtr").Call(g.d(), v.addr(), g.e.qual(implPkg, "Dec"+bc)))
		}
		inner := g.dec(sh.elem, v.elem(), omit, s)
		return one(jen.If(g.dCall("Ptr")).Block(
			append(one(v.val().Op("=").New(g.e.typ(sh.elem))), inner...)...).Else().Block(v.val().Op("=").Nil()))
	case kindSlice:
		return g.decSlice(t, sh.elem, v, s)
	case kindArray:
		i := s.get("i")
		inner := g.dec(sh.elem, expr(v.sel(false).Index(jen.Id(i))), nil, s)
		return one(jen.If(g.dCall("Array", jen.Len(v.val()))).Block(rangeOver(i, v.val(), inner)))
	case kindMap:
		return g.decMap(t, sh, v, s)
	case kindStruct:
		return g.decStruct(t, sh.strct, v, omit, s)
	case kindInterface:
		if types.Identical(t, errorType) {
			return one(v.val().Op("=").Add(g.dCall("Error", g.e.errorTypes())))
		}
		if n, ok := t.(*types.Named); ok && len(g.e.pi.variants(n)) > 0 {
			return g.decUnion(n, v, s)
		}
		return one(v.val().Op("=").Add(g.dCall("Any")))
	}
	return nil
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
func (g *codecGen) encSlice(t, elem types.Type, v vx, s fnScope) []jen.Code {
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
	if name, ok := g.helperName(elem, nil); ok {
		return g.encCombinator("EncList", v, jen.Id("idemEnc"+name), name != "")
	}
	if bc := basicCoder(elem); bc != "" {
		return g.encCombinator("EncList", v, g.e.qual(implPkg, "Enc"+bc), true)
	}
	i, at := s.get("i"), s.get("at")
	inner := g.enc(elem, expr(v.sel(false).Index(jen.Id(i))), nil, s)
	return one(jen.If(v.val().Op("==").Nil()).Block(eCall("Nil")).Else().Block(
		jen.Id(at).Op(":=").Add(eCall("List", jen.Len(v.val()))),
		rangeOver(i, v.val(), inner),
		eCall("End", jen.Id(at))))
}

// decSlice decodes as encSlice encodes.
func (g *codecGen) decSlice(t, elem types.Type, v vx, s fnScope) []jen.Code {
	switch {
	case isNamed(t, "net", "IP"):
		return one(jen.If(g.dCall("Ptr")).Block(v.val().Op("=").Add(g.dCall("Bytes"))).Else().Block(v.val().Op("=").Nil()))
	case isByte(elem) && types.Identical(t, byteSlice):
		return one(v.val().Op("=").Add(g.dCall("Bytes")))
	case isByte(elem):
		return one(v.val().Op("=").Add(g.e.typ(t)).Call(g.dCall("Bytes")))
	}
	if name, ok := g.helperName(elem, nil); ok {
		return g.combinator(name, "DecList", g.d(), v.addr(), "idemDec")
	}
	if bc := basicCoder(elem); bc != "" {
		return one(g.e.qual(implPkg, "DecList").Call(g.d(), v.addr(), g.e.qual(implPkg, "Dec"+bc)))
	}
	i := s.get("i")
	inner := g.dec(elem, expr(v.sel(false).Index(jen.Id(i))), nil, s)
	return []jen.Code{g.e.qual(implPkg, "DecListHead").Call(g.d(), v.addr()), rangeOver(i, v.val(), inner)}
}

// combinator calls the idemimpl combinator fn over x with the helper
// prefix+name of its elements; nothing when they cannot be stored.
func (g *codecGen) combinator(name, fn string, coder, x jen.Code, prefix string) []jen.Code {
	if name == "" {
		return nil
	}
	return one(g.e.qual(implPkg, fn).Call(coder, x, jen.Id(prefix+name)))
}

// encCombinator encodes v with idemimpl's fn (EncPtr, EncList) and the
// elements' encoder enc; nothing if there is none (ok false: the element
// type cannot be stored, which is reported).
func (g *codecGen) encCombinator(fn string, v vx, enc jen.Code, ok bool) []jen.Code {
	if !ok {
		return nil
	}
	return g.encBy(func(e *jen.Statement) *jen.Statement { return g.e.qual(implPkg, fn).Call(e, v.val(), enc) })
}

// encMap: Nil, or the entries in key order.
func (g *codecGen) encMap(sh shape, v vx, s fnScope) []jen.Code {
	if kc, xc := orderedCoder(sh.key), basicCoder(sh.elem); kc != "" && xc != "" {
		enc := func(m string) jen.Code { return jen.Parens(jen.Op("*").Add(g.e.qual(implPkg, "Encoder"))).Dot(m) }
		return g.encBy(func(e *jen.Statement) *jen.Statement {
			return g.e.qual(implPkg, "EncMap").Call(e, v.val(), enc(kc), enc(xc))
		})
	}
	k, x, at := s.get("k"), s.get("x"), s.get("at")
	kc := g.enc(sh.key, expr(jen.Id(k)), nil, s)
	xc := g.enc(sh.elem, expr(jen.Id(x)), nil, s)
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
func (g *codecGen) decMap(t types.Type, sh shape, v vx, s fnScope) []jen.Code {
	if kc, xc := orderedCoder(sh.key), basicCoder(sh.elem); kc != "" && xc != "" {
		dec := func(m string) jen.Code { return jen.Parens(jen.Op("*").Add(g.e.qual(implPkg, "Decoder"))).Dot(m) }
		return one(g.e.qual(implPkg, "DecMap").Call(g.d(), v.addr(), dec(kc), dec(xc)))
	}
	k, x, n := s.get("k"), s.get("x"), s.get("n")
	kc := g.dec(sh.key, expr(jen.Id(k)), nil, s)
	xc := g.dec(sh.elem, expr(jen.Id(x)), nil, s)
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
func (g *codecGen) encStruct(t types.Type, u *types.Struct, v vx, omit omitTree, s fnScope) []jen.Code {
	at := s.get("at")
	out := one(jen.Id(at).Op(":=").Add(eCall("Struct")))
	g.eachField(t, u, omit, func(f *types.Var, sub omitTree) {
		out = append(out, g.fieldEnc(f.Name(), g.enc(f.Type(), expr(v.sel(true).Dot(f.Name())), sub, s))...)
	})
	return append(out, eCall("End", jen.Id(at)))
}

// decStruct decodes the fields by name: a missing one (added since the
// record was written) stays zero, an unknown one (removed since) is
// skipped.
func (g *codecGen) decStruct(t types.Type, u *types.Struct, v vx, omit omitTree, s fnScope) []jen.Code {
	st := s.get("s") // before the fields' decoders name theirs
	out := one(jen.Id(st).Op(":=").Add(g.dCall("Struct")))
	g.eachField(t, u, omit, func(f *types.Var, sub omitTree) {
		out = append(out, g.fieldDec(st, f.Name(), func() []jen.Code {
			return g.dec(f.Type(), expr(v.sel(true).Dot(f.Name())), sub, s)
		})...)
	})
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
// stored: neither omitted whole nor left out (reach.storeStruct says why).
func (g *codecGen) eachField(t types.Type, u *types.Struct, omit omitTree, store func(f *types.Var, sub omitTree)) {
	pi := g.e.pi
	own := true
	if nt, ok := t.(*types.Named); ok && nt.Obj().Pkg() != pi.pkg.Types {
		own = false
	}
	for i := 0; i < u.NumFields(); i++ {
		f := u.Field(i)
		sub, omitted := omit[f.Name()]
		if omitted && len(sub) == 0 || pi.fieldStorage(u, i, own, sub) != fieldStored {
			continue
		}
		store(f, sub)
	}
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

// fieldEnc is a struct field's name, then the code of its value: one line
// when that is one call on the Encoder, e.Field("ID").String(v.ID) or
// idemEncMoney(e.Field("Total"), &v.Total).
func (g *codecGen) fieldEnc(name string, code []jen.Code) []jen.Code {
	if len(code) == 1 && g.last.stmt != nil && code[0] == jen.Code(g.last.stmt) {
		return one(g.last.call(eCall("Field", jen.Lit(name))))
	}
	return append(one(eCall("Field", jen.Lit(name))), code...)
}

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

func one(c jen.Code) []jen.Code { return []jen.Code{c} }

// encUnion writes the code that stores v, a value of the union n, by a
// type switch over the variants the analysis found a codec can store.
func (g *codecGen) encUnion(n *types.Named, v vx, s fnScope) []jen.Code {
	e, pi := g.e, g.e.pi
	x := s.get("x")
	var cases []jen.Code
	usesX := false
	for _, vt := range g.variants(n) {
		code := g.enc(vt, expr(jen.Id(x)), nil, s)
		usesX = usesX || uses(code, x)
		at := s.get("at")
		body := append(one(jen.Id(at).Op(":=").Add(eCall("Variant", jen.Lit(typeName(vt))))), code...)
		cases = append(cases, jen.Case(e.typ(vt)).Block(append(body, eCall("End", jen.Id(at)))...))
	}
	operand := v.val()
	if v.ptr != nil {
		operand = jen.Parens(operand) // (*v).(type)
	}
	sw := jen.Switch(operand.Clone().Assert(jen.Type()))
	if usesX {
		sw = jen.Switch(jen.Id(x).Op(":=").Add(operand).Assert(jen.Type()))
	}
	cases = append(one(jen.Case(jen.Nil()).Block(eCall("Nil"))), cases...)
	cases = append(cases, jen.Default().Block(eCall("NotVariant", jen.Lit(pi.typeString(n)), v.val())))
	return one(sw.Block(cases...))
}

// decUnion restores v, a value of the union n, by its variant's name.
func (g *codecGen) decUnion(n *types.Named, v vx, s fnScope) []jen.Code {
	x := s.get("x")
	var cases []jen.Code
	for _, vt := range g.variants(n) {
		code := g.dec(vt, expr(jen.Id(x)), nil, s)
		body := append(one(jen.Var().Id(x).Add(g.e.typ(vt))), code...)
		cases = append(cases, jen.Case(jen.Lit(typeName(vt))).Block(append(body, v.val().Op("=").Id(x))...))
	}
	name := s.get("name")
	cases = append(cases, jen.Default().Block(g.dCall("NotVariant", jen.Id(name))))
	return one(jen.If(g.dCall("Nil")).Block(v.val().Op("=").Nil()).Else().Block(
		jen.Id(name).Op(":=").Add(g.dCall("Variant")),
		jen.Switch(jen.Id(name)).Block(cases...)))
}

// typeName is t's stable name in a record: its package path and name, a
// pointer marked.
func typeName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		return "*" + typeName(p.Elem())
	}
	n := t.(*types.Named)
	return n.Obj().Pkg().Path() + "." + n.Obj().Name()
}

// errorTypes returns the value to pass as the known error types,
// building the file's idemErrors on first use.
func (e *emitter) errorTypes() jen.Code {
	if e.errs == nil {
		e.errs = &errTypes{name: e.global("idemErrors")}
		e.globals[e.errs.name] = true
		e.knownErrors()
	}
	return jen.Id(e.errs.name).Values()
}

// knownErrors fills e.errs with the exported error types (by value or
// pointer, whichever has the Error method) that a codec can store
// faithfully, and the exported variables of type error (sentinels), of
// errPackages.
func (e *emitter) knownErrors() {
	var sentinels []*types.Var
	for _, p := range e.plan.errPkgs {
		for _, name := range p.Scope().Names() {
			switch o := p.Scope().Lookup(name).(type) {
			case *types.TypeName:
				e.knownErrorType(o)
			case *types.Var:
				if (o.Exported() || p == e.pi.pkg.Types) && types.Identical(o.Type(), errorType) {
					sentinels = append(sentinels, o)
				}
			}
		}
	}
	if len(sentinels) > 0 {
		var cases []jen.Code
		for _, v := range sentinels {
			name := v.Pkg().Path() + "." + v.Name()
			ref := e.qual(v.Pkg(), v.Name())
			cases = append(cases, jen.Case(ref).Block(jen.Id("e").Dot("String").Call(jen.Lit(name)), jen.Return(jen.True())))
			e.errs.decode = append(e.errs.decode, jen.Case(jen.Lit(name)).Block(jen.Return(e.qual(v.Pkg(), v.Name()))))
		}
		e.errs.sentinels = jen.Switch(jen.Id("err")).Block(cases...)
	}
}

// knownErrorType adds o to idemErrors if it is an error type whose values
// a codec stores faithfully.
func (e *emitter) knownErrorType(o *types.TypeName) {
	t, ok := e.pi.implementer(o, errorIface)
	if !ok {
		return
	}
	if !e.pi.renderable(t) {
		return
	}
	if !e.plan.errTypes[o] {
		return // not restorable as itself (reach.knownErrors): stored as its text and chain
	}
	g := &codecGen{e: e, spec: "Errors"}
	scope := func() fnScope { return fnScope{"e": 1, "d": 1, "x": 1, "err": 1, "name": 1} }
	enc := g.enc(t, expr(jen.Id("x")), nil, scope())
	dec := g.dec(t, expr(jen.Id("x")), nil, scope())
	name := o.Pkg().Path() + "." + o.Name()
	if _, isPtr := t.(*types.Pointer); isPtr {
		name = "*" + name
	}
	e.errs.usesX = e.errs.usesX || uses(enc, "x")
	e.errs.encode = append(e.errs.encode, jen.Case(e.typ(t)).Block(append(append(
		[]jen.Code{jen.Id("e").Dot("String").Call(jen.Lit(name))}, enc...), jen.Return(jen.True()))...))
	e.errs.decode = append(e.errs.decode, jen.Case(jen.Lit(name)).Block(append(append(
		[]jen.Code{jen.Var().Id("x").Add(e.typ(t))}, dec...), jen.Return(jen.Id("x")))...))
}
