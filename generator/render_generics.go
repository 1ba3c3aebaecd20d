package generator

import (
	"go/types"
	"strings"

	"github.com/dave/jennifer/jen"
)

// Generics. Three shapes:
//
//   - Instances of generic types (Opt[int64], Page[Invoice]) are as
//     concrete as any named type: each instance gets key and codec helpers
//     of its own (idemKeyOpt_int64, idemEncPage_Invoice) and a drift check
//     of its own field list.
//   - Generic functions get a package-level generic wrapper (Go methods
//     cannot have type parameters): func IdempotentPublish[E Event](x
//     *Idempotent, ctx context.Context, e E) error, with its
//     IdempotentPublishKey companion. Each type argument's identity
//     (idemimpl.KeyBuilder.Type) opens the key, so Publish[OrderPlaced] and
//     Publish[OrderCancelled] are different calls. A value of a type
//     parameter is keyed through its constraint (typeParam).
//   - Methods of generic types get a generic wrapper type,
//     IdempotentRepo[T C], embedding *Repo[T]; the type arguments are
//     part of the key.
//
// Another package's generic functions and methods of its generic types
// are refused above var _ = pkg.F (analyze_foreign.go, pkgInfo.check): wrap the
// call in a function of the package and annotate that.

var reflectPkg = types.NewPackage("reflect", "reflect")

// isGeneric reports whether x is a generic function.
func isGeneric(x *fn) bool { return x.sig.TypeParams().Len() > 0 }

// typeArgKeys opens the key of a generic function's call with the
// identity of each type argument.
func (e *fileWriter) typeArgKeys(x *fn, c string) []jen.Code {
	var out []jen.Code
	tps := fnTypeParams(x)
	for i := 0; i < tps.Len(); i++ {
		out = append(out, jen.Id(c).Dot("Key").Call().Dot("Type").Call(
			e.qual(reflectPkg, "TypeFor").Index(jen.Id(tps.At(i).Obj().Name())).Call()))
	}
	return out
}

// typeArgs instantiates with x's own type parameters: [E, N].
func typeArgs(x *fn) jen.Code {
	tps := fnTypeParams(x)
	out := make([]jen.Code, tps.Len())
	for i := range out {
		out[i] = jen.Id(tps.At(i).Obj().Name())
	}
	return jen.List(out...)
}

// genericNames reserves the package-level names of generic function x's
// wrapper (IdempotentF), its Key companion (IdempotentFKey) and its begin
// helper; a package that declares one of the first two is told so.
func (e *fileWriter) genericNames(x *fn) helperNames {
	fname := x.name
	hn := helperNames{wrapper: "Idempotent" + upperFirst(fname), key: "Idempotent" + upperFirst(fname) + "Key"}
	for _, name := range []string{hn.wrapper, hn.key} {
		switch {
		case !e.globals[name]:
		case e.pi.pkg.Types.Scope().Lookup(name) == nil:
			// Not the package's: the wrapper type of the annotated methods
			// of a type of that name, the package's own or another's.
			msg := "%s is the generated wrapper type of the annotated methods of a type named %s; the generated wrapper of the generic function %s needs that name too (rename the function, or wrap those methods in another package)"
			e.pi.d.add(e.pi.fset.Position(x.pos), msg, name, strings.TrimPrefix(name, "Idempotent"), fname)
		default:
			msg := "package %s already declares %s; the generated wrapper of the generic function %s needs that name"
			e.pi.d.add(e.pi.fset.Position(x.pos), msg, e.pi.pkg.Name, name, fname)
		}
		e.globals[name] = true
	}
	hn.begin = e.global("idemBegin" + upperFirst(fname))
	return hn
}

// genericSelfCheck is the signature self-check of a generic function or
// a method of a generic type: a generic blank function instantiates it
// with its own type parameters.
func (e *fileWriter) genericSelfCheck(x *fn, sig *types.Signature, ref *jen.Statement) *jen.Statement {
	if x.recv == nil {
		ref = e.qual(x.obj.Pkg(), x.obj.Name()).Index(typeArgs(x))
	}
	return jen.Func().Id("_").Types(e.typeParamDecls(x)...).Params().Block(
		jen.Var().Id("_").Func().Add(e.signature(sig, nil)).Op("=").Add(ref))
}

// genericGroup is the wrapper type of a generic type's methods and its
// constructor: IdempotentRepo[T C] embeds *Repo[T].
func (e *fileWriter) genericGroup(g *group, field string, guardT jen.Code) []jen.Code {
	n := g.recv.Type().(*types.Named)
	tps := n.TypeParams()
	decls := make([]jen.Code, tps.Len())
	args := make([]jen.Code, tps.Len())
	for i := range decls {
		tp := tps.At(i)
		decls[i] = jen.Id(tp.Obj().Name()).Add(e.constraint(tp.Constraint()))
		args[i] = jen.Id(tp.Obj().Name())
	}
	t := g.recv.Name()
	typeName, ctor := "Idempotent"+t, "NewIdempotent"+t
	inst := func(name string) *jen.Statement { return jen.Id(name).Index(jen.List(args...)) }
	return []jen.Code{
		jen.Commentf("%s is a *%s whose annotated methods run at most once per key; the type arguments are part of the key.", typeName, t).Line().
			Type().Id(typeName).Types(decls...).Struct(jen.Op("*").Add(inst(t)), jen.Id(field).Add(guardT)),
		jen.Commentf("%s wraps t: its annotated methods are guarded by g, the others are t's own.", ctor).Line().
			Func().Id(ctor).Types(decls...).Params(jen.Id("t").Op("*").Add(inst(t)), jen.Id("g").Add(guardT)).Op("*").Add(inst(typeName)).Block(
			jen.Return(jen.Op("&").Add(inst(typeName)).Values(jen.Dict{jen.Id(t): jen.Id("t"), jen.Id(field): jen.Id("g")})),
		),
	}
}

// genericParams is (x *Idempotent, params...) results of a generic wrapper.
func (e *fileWriter) genericParams(x *fn, recv, typeName string, names []string) jen.Code {
	s := x.sig
	ps := []jen.Code{jen.Id(recv).Op("*").Id(typeName)}
	for i := 0; i < s.Params().Len(); i++ {
		t := s.Params().At(i).Type()
		tc := e.typ(t)
		if s.Variadic() && i == s.Params().Len()-1 {
			tc = jen.Op("...").Add(e.typ(t.(*types.Slice).Elem()))
		}
		ps = append(ps, jen.Id(names[i]).Add(tc))
	}
	st := jen.Params(ps...)
	rs := make([]jen.Code, s.Results().Len())
	for i := range rs {
		rs[i] = e.typ(s.Results().At(i).Type())
	}
	if len(rs) == 1 {
		return st.Add(rs[0])
	}
	return st.Params(rs...)
}

// typeParamResults reports each result of x whose type mentions a type
// parameter, and returns false if there is one: one Spec and codec serve
// every type argument, and a stored record does not say which one wrote
// it. omit= does not lift it (the codec's type would still name the type
// parameter at package level).
func (e *fileWriter) typeParamResults(x *fn, what string) bool {
	ok := true
	for i, t := range x.result {
		if tp := firstTypeParam(t, map[*types.Named]bool{}); tp != nil {
			e.pi.d.add(e.pi.fset.Position(x.pos), "%s: result %d (%s) mentions the type parameter %s, which cannot be stored: one codec serves every type argument, and a record does not say which one wrote it (return a concrete type)",
				what, i+1, e.pi.typeString(t), tp.Obj().Name())
			ok = false
		}
	}
	return ok
}
