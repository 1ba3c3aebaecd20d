package generator

import (
	"go/types"

	"github.com/dave/jennifer/jen"
)

// encUnion writes the code that stores v, a value of the union n, by a
// type switch over the variants a codec can store.
func (g *codecGen) encUnion(n *types.Named, vs []types.Type, v vx, path, foreignAt string, s fnScope) []jen.Code {
	e, pi := g.e, g.e.pi
	x := s.get("x")
	var cases []jen.Code
	usesX := false
	for _, vt := range vs {
		code, ok := g.variant(func(tg *codecGen) []jen.Code { return tg.enc(vt, expr(jen.Id(x)), path, foreignAt, nil, s) })
		if !ok {
			continue
		}
		usesX = usesX || uses(code, x)
		at := s.get("at")
		body := append(one(jen.Id(at).Op(":=").Add(eCall("Variant", jen.Lit(typeName(vt))))), code...)
		cases = append(cases, jen.Case(e.typ(vt)).Block(append(body, eCall("End", jen.Id(at)))...))
	}
	if !g.unionStored(n, cases, path, foreignAt) {
		return nil
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
func (g *codecGen) decUnion(n *types.Named, vs []types.Type, v vx, path, foreignAt string, s fnScope) []jen.Code {
	x := s.get("x")
	var cases []jen.Code
	for _, vt := range vs {
		code, ok := g.variant(func(tg *codecGen) []jen.Code { return tg.dec(vt, expr(jen.Id(x)), path, foreignAt, nil, s) })
		if !ok {
			continue
		}
		body := append(one(jen.Var().Id(x).Add(g.e.typ(vt))), code...)
		cases = append(cases, jen.Case(jen.Lit(typeName(vt))).Block(append(body, v.val().Op("=").Id(x))...))
	}
	if !g.unionStored(n, cases, path, foreignAt) {
		return nil
	}
	name := s.get("name")
	cases = append(cases, jen.Default().Block(g.dCall("NotVariant", jen.Id(name))))
	return one(jen.If(g.dCall("Nil")).Block(v.val().Op("=").Nil()).Else().Block(
		jen.Id(name).Op(":=").Add(g.dCall("Variant")),
		jen.Switch(jen.Id(name)).Block(cases...)))
}

// variant returns the code code writes for one variant of a union, and
// merges what it stores into g; false if the variant cannot be stored (a
// value of it fails the recording).
func (g *codecGen) variant(code func(tg *codecGen) []jen.Code) ([]jen.Code, bool) {
	tg := &codecGen{e: g.e, lossy: map[string]bool{}, skipped: map[string]bool{}, spec: g.spec, dry: g.dry}
	c := code(tg)
	if len(tg.problems) > 0 {
		return nil, false
	}
	g.absorb(tg.lossy, tg.skipped, tg.errs, tg.unions)
	return c, true
}

// unionStored records that values of n are stored as a union, or a
// problem when none of its variants can be.
func (g *codecGen) unionStored(n *types.Named, cases []jen.Code, path, foreignAt string) bool {
	pi := g.e.pi
	if len(cases) == 0 {
		g.fail(path, "interface "+pi.typeString(n)+" cannot be decoded to its dynamic type (no type of its package that implements it can be stored)", foreignAt)
		return false
	}
	g.addUnions(map[string]bool{pi.typeString(n): true})
	return true
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

func (g *codecGen) addUnions(u map[string]bool) {
	for k := range u {
		if g.unions == nil {
			g.unions = map[string]bool{}
		}
		g.unions[k] = true
	}
}

// keyUnion writes the key material of v, a value of the union n: the
// dynamic type's name, then the value, for each variant that can be
// keyed; another dynamic type is ErrInvalidKey when the call starts.
func (w *writer) keyUnion(n *types.Named, vs []types.Type, v val) ([]jen.Code, bool) {
	b := w.b
	x := w.n.get("x")
	defer delete(w.n, x)
	var cases []jen.Code
	usesX := false
	for _, vt := range vs {
		tw := &writer{e: w.e, b: w.b, n: w.n, keyWalk: keyWalk{noAdvice: true}, inlining: w.inlining, lenient: w.lenient, payload: w.payload}
		code, ok := tw.write(val{e: id(x)}, vt, "", nil, false)
		if !ok {
			continue // not keyable: a value of it is ErrInvalidKey
		}
		for _, s := range tw.skipped {
			w.skip(s)
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
