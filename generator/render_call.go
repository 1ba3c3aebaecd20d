package generator

import "github.com/dave/jennifer/jen"

// wrap is what the declarations of one wrapped function share: its
// names, the wrapper's local names and the begin helper's parameters.
type wrap struct {
	x               *fn
	typeName, field string // the wrapper type and its guard field
	hn              helperNames
	// display names the function in comments (pkg.F, T.M); specBase ends
	// the package-level names (idemSpecF); specName is the stored name.
	display, specBase, specName string
	ns                          namer
	recv, c, k                  string // the wrapper's receiver, the call, its key material
	specVar                     string
	resultStruct                string     // "" unless several results travel as one struct
	resultT                     jen.Code   // what Do returns besides the error
	keyParams, beginParams      []jen.Code // Key's parameters, begin's
	beginArgs                   []jen.Code // the wrapper's (and Key's) arguments to begin
}

// newWrap names what x's declarations share.
func newWrap(x *fn, typeName, field string, hn helperNames) *wrap {
	w := &wrap{x: x, typeName: typeName, field: field, hn: hn, ns: namer{}}
	w.display, w.specName = x.plan.Display, x.plan.Spec
	w.specBase = specBase(x)
	for _, p := range x.params {
		w.ns[p.name] = true
	}
	for i := 0; i < fnTypeParams(x).Len(); i++ {
		w.ns[fnTypeParams(x).At(i).Obj().Name()] = true
	}
	recvBase := "x"
	if x.recvName != "" {
		recvBase = x.recvName // the source's receiver name
	}
	w.recv, w.c, w.k = w.ns.get(recvBase), w.ns.get("c"), w.ns.get("k")
	x.recvVar = w.recv
	return w
}

// beginCall is the wrapper's (and Key's) call of begin.
func (e *fileWriter) beginCall(w *wrap) *jen.Statement {
	if isGeneric(w.x) && w.x.recv == nil {
		return jen.Id(w.hn.begin).Index(typeArgs(w.x)).Call(append([]jen.Code{jen.Id(w.recv)}, w.beginArgs...)...)
	}
	return jen.Id(w.recv).Dot(w.hn.begin).Call(w.beginArgs...)
}

// innerCall calls the wrapped function (or method) with the wrapper's
// arguments.
func (e *fileWriter) innerCall(w *wrap) *jen.Statement {
	x, target := w.x, w.x.obj.Name()
	args := make([]jen.Code, len(x.params))
	for i, p := range x.params {
		args[i] = jen.Id(p.name)
		if p.variadic {
			args[i] = jen.Id(p.name).Op("...")
		}
	}
	switch {
	case x.inner != "":
		return jen.Id(w.recv).Dot(x.inner).Dot(target).Call(args...)
	case x.recv != nil:
		return jen.Id(w.recv).Dot(x.recv.Name()).Dot(target).Call(args...)
	case isGeneric(x):
		return e.qual(x.obj.Pkg(), target).Index(typeArgs(x)).Call(args...)
	}
	return e.qual(x.obj.Pkg(), target).Call(args...)
}
