package generator

import (
	"strconv"

	"github.com/dave/jennifer/jen"
)

// stepWrapper emits x's step wrapper and its result codec.
func (e *emitter) stepWrapper(x *fn) []jen.Code {
	display, base := x.name, specBase(x)
	if x.recv != nil {
		display = x.recv.Name() + "." + x.name
	}
	name := x.stepName
	if name == "" {
		name = display
	}
	var out []jen.Code
	codec := jen.Nil()
	var resultT jen.Code = jen.Struct()
	codecDoc := ""
	if len(x.result) == 1 {
		resultT = e.typ(x.result[0])
		codecVar := e.global("idemStepCodec" + base)
		c, d, ok := e.resultCodec(x, base, resultT)
		if !ok {
			return nil
		}
		out = append(out, jen.Var().Id(codecVar).Op("=").Add(c))
		codec, codecDoc = jen.Id(codecVar), d
	}
	ns := namer{}
	names := make([]string, len(x.params))
	args := make([]jen.Code, len(x.params))
	for i, p := range x.params {
		ns[p.name] = true
		names[i] = p.name
		args[i] = jen.Id(p.name)
		if p.variadic {
			args[i] = jen.Id(p.name).Op("...")
		}
	}
	ctx := x.params[0].name
	head, call := jen.Func(), e.qual(x.obj.Pkg(), x.name).Call(args...)
	if x.recv != nil {
		recv := x.recvName
		if recv == "" || recv == "_" {
			recv = ns.get("r")
		}
		head = jen.Func().Params(jen.Id(recv).Add(e.typ(x.sig.Recv().Type())))
		call = jen.Id(recv).Dot(x.name).Call(args...)
	}
	step := func(body jen.Code) *jen.Statement {
		return e.qual(idemPkg, "StepWith").Call(jen.Id(ctx), jen.Lit(name), codec,
			jen.Func().Params(jen.Id(ctx).Add(e.qual(contextPkg, "Context"))).Params(resultT, jen.Error()).Block(body))
	}
	var body []jen.Code
	if len(x.result) == 1 {
		body = []jen.Code{jen.Return(step(jen.Return(call)))}
	} else {
		errName := ns.get("err")
		body = []jen.Code{
			jen.List(jen.Id("_"), jen.Id(errName)).Op(":=").Add(step(jen.Return(jen.Struct().Values(), call))),
			jen.Return(jen.Id(errName)),
		}
	}
	replays := "it returns the recorded result without running"
	if len(x.result) == 0 {
		replays = "it returns nil without running"
	}
	doc := StepWrapperName(x.name) + " is " + display + " run as the step " + strconv.Quote(name) +
		" of the guarded call running with " + ctx + " (idem.Step): once that call recorded the step, " + replays + "." + codecDoc
	fnDecl := jen.Comment(doc).Line().Add(head).Id(StepWrapperName(x.name)).Add(e.signature(x.sig, names)).Block(body...)
	e.pi.emitted[x] = true
	return append([]jen.Code{fnDecl}, out...)
}
