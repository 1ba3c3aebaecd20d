package generator

import (
	"fmt"
	"go/types"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"
)

// decorator emits the decorator type of interface g.recv, its constructor,
// the compile-time check that it implements the interface, and a method
// calling the inner value for each method no directive annotates.
func (e *fileWriter) decorator(g *group, typeName, ctor, field string, methods namer) []jen.Code {
	t := g.recv.Name()
	guardT := jen.Op("*").Add(e.qual(idemPkg, "Guard"))
	inner := methods.get("inner")
	annotated := map[string]bool{}
	var names []string
	for _, x := range g.fns {
		x.inner = inner
		annotated[x.name] = true
		names = append(names, x.name)
	}
	guarded := e.pi.annotatedElsewhere()
	iface := g.recv.Type().Underlying().(*types.Interface)
	for i := 0; i < iface.NumMethods(); i++ {
		if m := iface.Method(i); !annotated[m.Name()] && guarded[m] != nil {
			names = append(names, m.Name()+" (through Idempotent"+guarded[m].Name()+")")
		}
	}
	doc := fmt.Sprintf("%s is a %s whose %s %s at most once per key; its other methods call the inner %s. Decorators of two %ss on one Guard share the keys of each annotated method: the interface method is the operation, whichever implementation runs it.",
		typeName, t, andList(names), map[bool]string{true: "runs", false: "run"}[len(names) == 1], t, t)
	out := []jen.Code{
		jen.Comment(doc).Line().
			Type().Id(typeName).Struct(jen.Id(inner).Id(t), jen.Id(field).Add(guardT)),
		jen.Commentf("%s decorates inner: the annotated methods are guarded by g, the others call inner.", ctor).Line().
			Func().Id(ctor).Params(jen.Id("inner").Id(t), jen.Id("g").Add(guardT)).Op("*").Id(typeName).Block(
			jen.Return(jen.Op("&").Id(typeName).Values(jen.Dict{jen.Id(inner): jen.Id("inner"), jen.Id(field): jen.Id("g")})),
		),
	}
	e.typedChecks = append(e.typedChecks, jen.Id("_").Id(t).Op("=").Parens(jen.Op("*").Id(typeName)).Parens(jen.Nil()))
	for i := 0; i < iface.NumMethods(); i++ {
		m := iface.Method(i)
		if annotated[m.Name()] {
			continue
		}
		owner := guarded[m]
		sig := m.Type().(*types.Signature)
		ns := namer{}
		pnames := make([]string, sig.Params().Len())
		args := make([]jen.Code, len(pnames))
		// The body refers to no package-level name: the source's names
		// are kept (pN for unnamed and blank ones), only kept apart.
		for j := range pnames {
			n := sig.Params().At(j).Name()
			if n == "" || n == "_" {
				n = "p" + strconv.Itoa(j)
			}
			pnames[j] = ns.get(n)
			args[j] = jen.Id(pnames[j])
			if sig.Variadic() && j == len(pnames)-1 {
				args[j] = jen.Id(pnames[j]).Op("...")
			}
		}
		recv := ns.get("x")
		call := jen.Id(recv).Dot(inner).Dot(m.Name()).Call(args...)
		doc := fmt.Sprintf("%s calls the inner %s's %s (no directive here: not guarded).", m.Name(), t, m.Name())
		if owner != nil {
			// Annotated in an embedded interface of this package: its
			// decorator guards the call, in the same key space.
			call = jen.Id("NewIdempotent"+owner.Name()).Call(jen.Id(recv).Dot(inner), jen.Id(recv).Dot(field)).Dot(m.Name()).Call(args...)
			doc = fmt.Sprintf("%s is %s.%s, guarded by %s's decorator: one key space with Idempotent%s.", m.Name(), owner.Name(), m.Name(), owner.Name(), owner.Name())
		}
		body := call
		if sig.Results().Len() > 0 {
			body = jen.Return(call)
		}
		out = append(out, jen.Comment(doc).Line().
			Func().Params(jen.Id(recv).Op("*").Id(typeName)).Id(m.Name()).Add(e.signature(sig, pnames)).Block(body))
	}
	return out
}

// andList writes a, b and c.
func andList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
