package generator

import (
	"go/types"
	"strings"

	"github.com/dave/jennifer/jen"
)

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
func (e *emitter) variants(n *types.Named) []types.Type {
	if vs, ok := e.unionVariants[n]; ok {
		return vs
	}
	var vs []types.Type
	iface, _ := n.Underlying().(*types.Interface)
	p := n.Obj().Pkg()
	if iface != nil && !iface.Empty() && p != nil && !isStd(p.Path()) && n.TypeArgs().Len() == 0 {
		for _, name := range p.Scope().Names() {
			t, ok := e.implementer(p.Scope().Lookup(name), iface)
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
	e.unionVariants[n] = vs
	return vs
}

// implementer returns the type declared by obj that implements iface
// and that the generated file can name: T when T has the methods, *T
// when only the pointer has them. Only this package's types may be
// unexported; generic and interface types are not implementers.
func (e *emitter) implementer(obj types.Object, iface *types.Interface) (types.Type, bool) {
	o, ok := obj.(*types.TypeName)
	if !ok || o.IsAlias() || (!o.Exported() && o.Pkg() != e.pi.pkg.Types) || !e.nameable(o) {
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

// isStd reports whether path is a standard library package's.
func isStd(path string) bool {
	return !strings.Contains(strings.SplitN(path, "/", 2)[0], ".")
}

// union writes the code that stores (encode) or restores v, a value of
// the union n, by a switch over the variants a codec can store.
func (g *codecGen) union(n *types.Named, vs []types.Type, v vx, path, foreignAt string, s fnScope, encode bool) []jen.Code {
	e, pi := g.e, g.e.pi
	x := s.get("x")
	var cases []jen.Code
	usesX := false
	for _, vt := range vs {
		tg := &codecGen{e: e, lossy: map[string]bool{}, skipped: map[string]bool{}, spec: g.spec}
		var code []jen.Code
		if encode {
			code = tg.enc(vt, expr(jen.Id(x)), path, foreignAt, nil, s)
		} else {
			code = tg.dec(vt, expr(jen.Id(x)), path, foreignAt, nil, s)
		}
		if len(tg.problems) > 0 {
			continue // not restorable: a value of it fails the recording
		}
		for l := range tg.lossy {
			g.lossy[l] = true
		}
		for f := range tg.skipped {
			g.skipped[f] = true
		}
		g.errs = g.errs || tg.errs
		g.addUnions(tg.unions)
		name := typeName(vt)
		if encode {
			usesX = usesX || uses(code, x)
			at := s.get("at")
			body := append([]jen.Code{jen.Id(at).Op(":=").Id("e").Dot("Variant").Call(jen.Lit(name))}, code...)
			cases = append(cases, jen.Case(e.typ(vt)).Block(append(body, jen.Id("e").Dot("End").Call(jen.Id(at)))...))
		} else {
			body := append([]jen.Code{jen.Var().Id(x).Add(e.typ(vt))}, code...)
			cases = append(cases, jen.Case(jen.Lit(name)).Block(append(body, v.val().Op("=").Id(x))...))
		}
	}
	if len(cases) == 0 {
		g.fail(path, "interface "+pi.typeString(n)+" cannot be decoded to its dynamic type (no type of its package that implements it can be stored)", foreignAt)
		return nil
	}
	g.addUnions(map[string]bool{pi.typeString(n): true})
	if encode {
		operand := v.val()
		if v.ptr != nil {
			operand = jen.Parens(operand) // (*v).(type)
		}
		sw := jen.Switch(operand.Clone().Assert(jen.Type()))
		if usesX {
			sw = jen.Switch(jen.Id(x).Op(":=").Add(operand).Assert(jen.Type()))
		}
		cases = append([]jen.Code{jen.Case(jen.Nil()).Block(jen.Id("e").Dot("Nil").Call())}, cases...)
		cases = append(cases, jen.Default().Block(jen.Id("e").Dot("NotVariant").Call(jen.Lit(pi.typeString(n)), v.val())))
		return one(sw.Block(cases...))
	}
	name := s.get("name")
	cases = append(cases, jen.Default().Block(jen.Id("d").Dot("NotVariant").Call(jen.Id(name))))
	return one(jen.If(jen.Id("d").Dot("Nil").Call()).Block(v.val().Op("=").Nil()).Else().Block(
		jen.Id(name).Op(":=").Id("d").Dot("Variant").Call(),
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
		tw := &writer{e: w.e, b: w.b, n: w.n, noAdvice: true, inlining: w.inlining, lenient: w.lenient}
		code, ok := tw.write(val{e: id(x)}, vt, "", nil, false)
		if !ok {
			continue // not keyable: a value of it is ErrInvalidKey
		}
		for _, s := range tw.skipped {
			w.skipped = addOnce(w.skipped, s)
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
