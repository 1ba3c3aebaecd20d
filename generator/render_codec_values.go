package generator

import (
	"fmt"
	"go/token"
	"go/types"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/dave/jennifer/jen"
)

// helper makes (once) the helpers of a named type and returns their name
// suffix; "" if the type cannot be stored (problems are recorded).
func (g *codecGen) helper(n *types.Named, path, foreignAt string, omit omitTree) string {
	key := codecHelperKey(n, g.spec, omit)
	h := g.e.codecHelpers[key]
	if h == nil { // a use while it is built finds it: the type reaches itself
		h = g.buildHelper(n, key, omit)
	}
	if h.problems != nil {
		g.lift(h, path, foreignAt)
		return ""
	}
	g.absorb(h.lossy, h.skipped, h.errs, h.unions)
	return h.name
}

// buildHelper writes idemEncN and idemDecN, as the plan names them, when
// the plan has them (fp.Helpers: listed and not failed), and otherwise
// walks the type only for why it cannot be stored, keeping nothing of the
// code. A helper the plan does not list is one the analysis met only
// inside a helper that fails (g.dry): walked, forgotten, and walked again
// on a next use.
func (g *codecGen) buildHelper(n *types.Named, key string, omit omitTree) *codecHelper {
	e := g.e
	plan := e.plan.helper(codecKind(key), key)
	listed := plan.Type != ""
	write := listed && !plan.Failed
	h := &codecHelper{recursive: plan.Recursive}
	if write {
		h.name = strings.TrimPrefix(plan.Name, "idemEnc")
	}
	e.codecHelpers[key] = h // recursion finds it
	sub := &codecGen{e: e, lossy: map[string]bool{}, skipped: map[string]bool{}, spec: g.spec, dry: g.dry || !write}
	// Paths inside the helper are relative; foreignAt "" at the root of an
	// own type, or the root itself of another package's.
	root := ""
	if n.Obj().Pkg() != e.pi.pkg.Types {
		root = "\x00" // inside another package's type: advise omitting its root
	}
	self := deref(jen.Id("v"))
	encBody := sub.encInline(n, self, "", root, omit, fnScope{"e": 1, "d": 1, "v": 1})
	decBody := sub.decInline(n, self, "", root, omit, fnScope{"e": 1, "d": 1, "v": 1})
	switch {
	case len(sub.problems) > 0:
		h.problems = sub.problems
		if write {
			e.pi.d.add(token.Position{Filename: e.pi.out}, "internal error: the codec helper of %s cannot be written, which the analysis did not decide", key)
		}
		return h
	case !write:
		if !g.dry {
			e.pi.d.add(token.Position{Filename: e.pi.out}, "internal error: the codec helper of %s is not in the plan", key)
		}
		delete(e.codecHelpers, key)
		return h
	}
	h.lossy, h.skipped, h.errs, h.unions = sub.lossy, sub.skipped, sub.errs, sub.unions
	if h.recursive {
		// A value of a recursive type can nest without end (a cycle) or,
		// in a corrupt record, deeper than the stack holds: bound it.
		encBody = append(depthGuard("e"), encBody...)
		decBody = append(depthGuard("d"), decBody...)
	}
	tt := e.typ(n)
	e.helperDecls = append(e.helperDecls,
		helperDecl{name: "idemEnc" + h.name, code: jen.Func().Id("idemEnc"+h.name).Params(jen.Id("e").Op("*").Add(e.qual(implPkg, "Encoder")), jen.Id("v").Op("*").Add(tt)).Block(encBody...)},
		helperDecl{name: "idemDec" + h.name, code: jen.Func().Id("idemDec"+h.name).Params(jen.Id("d").Op("*").Add(e.qual(implPkg, "Decoder")), jen.Id("v").Op("*").Add(tt)).Block(decBody...)},
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
	// recursive: the type reaches itself (its bodies guard the depth;
	// the plan says so).
	recursive      bool
	problems       []codecProblem // relative paths
	lossy, skipped map[string]bool
	errs           bool
	unions         map[string]bool
}

// absorb takes in what writing a helper (or a union's variants) found:
// lossy and skipped paths, error values, unions.
func (g *codecGen) absorb(lossy, skipped map[string]bool, errs bool, unions map[string]bool) {
	for l := range lossy {
		g.lossy[l] = true
	}
	for f := range skipped {
		g.skipped[f] = true
	}
	g.errs = g.errs || errs
	g.addUnions(unions)
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
			return g.encCombinator("EncPtr", v, g.e.qual(implPkg, "Enc"+bc), true)
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
		if n, ok := t.(*types.Named); ok && len(g.e.pi.variants(n)) > 0 {
			return g.encUnion(n, g.e.pi.variants(n), v, path, foreignAt, s)
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
			return one(g.e.qual(implPkg, "DecPtr").Call(g.d(), v.addr(), g.e.qual(implPkg, "Dec"+bc)))
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
		if n, ok := t.(*types.Named); ok && len(g.e.pi.variants(n)) > 0 {
			return g.decUnion(n, g.e.pi.variants(n), v, path, foreignAt, s)
		}
		return one(v.val().Op("=").Add(g.dCall("Any")))
	}
	return nil
}

// storableShape refuses, with a problem at path, the shapes no codec
// stores: funcs, channels, maps of other keys than strings and numbers,
// interfaces other than error, any and unions. Errors are stored by their
// text and chain, and the known error types as themselves (render_errtypes.go);
// an any with its dynamic type where that is one the runtime restores
// exactly (what encoding/json decodes into an any, basic types).
func (g *codecGen) storableShape(t types.Type, sh shape, path, foreignAt string) bool {
	if why := g.e.pi.unstorable(t, sh); why != "" {
		g.fail(path, why, foreignAt)
		return false
	}
	return true
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
		return g.encCombinator("EncList", v, g.e.qual(implPkg, "Enc"+bc), true)
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
		return one(g.e.qual(implPkg, "DecList").Call(g.d(), v.addr(), g.e.qual(implPkg, "Dec"+bc)))
	}
	i := s.get("i")
	inner := g.dec(elem, expr(v.sel(false).Index(jen.Id(i))), path+"[]", foreignAt, nil, s)
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
func (g *codecGen) encMap(sh shape, v vx, path, foreignAt string, s fnScope) []jen.Code {
	if kc, xc := orderedCoder(sh.key), basicCoder(sh.elem); kc != "" && xc != "" {
		enc := func(m string) jen.Code { return jen.Parens(jen.Op("*").Add(g.e.qual(implPkg, "Encoder"))).Dot(m) }
		return g.encBy(func(e *jen.Statement) *jen.Statement {
			return g.e.qual(implPkg, "EncMap").Call(e, v.val(), enc(kc), enc(xc))
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
		dec := func(m string) jen.Code { return jen.Parens(jen.Op("*").Add(g.e.qual(implPkg, "Decoder"))).Dot(m) }
		return one(g.e.qual(implPkg, "DecMap").Call(g.d(), v.addr(), dec(kc), dec(xc)))
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
	switch pi.fieldStorage(u, i, own, sub) {
	case fieldStored:
		return false
	case fieldOpaque:
		g.lossy[pi.typeString(f.Type())] = true
	case fieldJSONSkipped:
		g.skipped[pi.typeString(t)+"."+f.Name()] = true
	case fieldLossyOwner:
		g.lossy[pi.typeString(t)] = true
	case fieldRefused:
		g.fail(joinPath(path, f.Name()), "unexported field (export it, or give the type a marshaling pair)", "")
	}
	return true
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
