package generator

import (
	"go/types"

	"github.com/dave/jennifer/jen"
)

// Values of type error in results (kafka-go's Response.Error, a batch's
// per-item errors) are stored by the runtime with their text and their
// chain (what they wrap), so errors.Is and errors.As find what they found
// before. The error types and sentinel errors of the packages the results
// come from are restored as themselves: the generated file lists them in
// one type, idemErrors, that implements idemimpl.ErrorTypes. Any other error
// comes back as its text and chain, and the wrapper's doc line says so.

// errTypes is the state of a file's idemErrors.
type errTypes struct {
	name   string // the type's name in the generated file
	encode []jen.Code
	decode []jen.Code
	usesX  bool
	// sentinels is the switch over the sentinel errors, nil if none.
	sentinels jen.Code
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

// errorTypesDecl is the declaration of x, the file's idemErrors (none if
// nil).
func (e *fileWriter) errorTypesDecl(x *errTypes) []jen.Code {
	if x == nil {
		return nil
	}
	encT, decT := e.qual(implPkg, "Encoder"), e.qual(implPkg, "Decoder")
	var enc []jen.Code
	if len(x.encode) > 0 {
		sw := jen.Switch(jen.Id("err").Assert(jen.Type()))
		if x.usesX {
			sw = jen.Switch(jen.Id("x").Op(":=").Id("err").Assert(jen.Type()))
		}
		enc = append(enc, sw.Block(x.encode...))
	}
	if x.sentinels != nil {
		enc = append(enc, x.sentinels)
	}
	enc = append(enc, jen.Return(jen.False()))
	dec := []jen.Code{jen.Return(jen.Nil())}
	if len(x.decode) > 0 {
		dec = append([]jen.Code{jen.Switch(jen.Id("name")).Block(x.decode...)}, dec...)
	}
	return []jen.Code{
		jen.Commentf("%s restores the errors of its cases in results as themselves; others come back as their text and chain.", x.name).Line().
			Type().Id(x.name).Struct(),
		jen.Func().Params(jen.Id(x.name)).Id("EncodeError").Params(jen.Id("e").Op("*").Add(encT), jen.Id("err").Error()).Bool().Block(enc...),
		jen.Func().Params(jen.Id(x.name)).Id("DecodeError").Params(jen.Id("d").Op("*").Add(decT), jen.Id("name").String()).Error().Block(dec...),
	}
}
