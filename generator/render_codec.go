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
