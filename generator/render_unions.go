package generator

import (
	"go/types"

	"github.com/dave/jennifer/jen"
)

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
