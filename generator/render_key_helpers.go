package generator

import (
	"fmt"
	"go/token"
	"go/types"
	"strings"

	"github.com/dave/jennifer/jen"
)

// tagHint suggests the struct tag for a field (not for a parameter or an
// element).
func tagHint(path string) string {
	if strings.Contains(path, ".") && !strings.HasSuffix(path, "]") {
		return `tag the field idem:"-"`
	}
	return ""
}

func one(c jen.Code) []jen.Code { return []jen.Code{c} }

// loopVar declares the index i of a loop over body, or nothing when body
// does not index with it (elements whose key material is constant, such
// as [1]struct{ F int `idem:"-"` }, write only their length): Go rejects
// an unused variable.
func loopVar(body []jen.Code, i string) *jen.Statement {
	if strings.Contains(fmt.Sprintf("%#v", jen.Block(body...)), "["+i+"]") {
		return jen.Id(i).Op(":=")
	}
	return jen.Null()
}

// nilCheck writes Nil for a nil pointer, slice or map, else body.
func (w *writer) nilCheck(v val, body []jen.Code) []jen.Code {
	return one(jen.If(v.value().Op("==").Nil()).Block(w.b().Dot("Nil").Call()).Else().Block(body...))
}

// nilIface guards a method call on an interface value against nil, and
// keeps a nil slice or map with a marshaler (net.IP) apart from an empty
// one, which marshal alike.
func (w *writer) nilIface(t types.Type, v val, call jen.Code) []jen.Code {
	switch t.Underlying().(type) {
	case *types.Slice, *types.Map:
		return w.nilCheck(v, one(call))
	}
	if types.IsInterface(t) {
		return w.nilCheck(v, one(call))
	}
	return one(call)
}

func (w *writer) basic(v val, t types.Type, u *types.Basic, path string) ([]jen.Code, bool) {
	method, target := keyMethod(u)
	if method == "" {
		return refused()
	}
	x := v.value()
	if !types.Identical(t, target) {
		x = jen.Id(target.(*types.Basic).Name()).Call(x)
	}
	return one(w.b().Dot(method).Call(x)), true
}

// valueWriter is the idemimpl writer by value (StringKey…) of the values
// of a predeclared basic type, for KeyList and KeyMap; nil for other
// types. The analysis pins t if it is an alias (reach.keyShape), as for
// KeyPtr's.
func (w *writer) valueWriter(t types.Type) jen.Code {
	bw := basicWriter(t)
	if bw == "" {
		return nil
	}
	return w.e.qual(implPkg, strings.TrimPrefix(bw, "Key")+"Key")
}

// helper returns the name of the key function of named type n, as the
// plan names it, and the analysis's facts of it (fp.keyFacts), writing it
// on first use if the plan says it can be written; "" if not. Recursive
// types work: it counts as written before its body is.
func (e *emitter) helper(n *types.Named, lenient bool) (string, *keyFacts, helperKey) {
	obj := n.Obj()
	if lenient {
		// A payload helper is the key helper when that one can be
		// written: a lenient twin only where they differ.
		if name, f, k := e.helper(n, false); f != nil && f.problems == nil {
			return name, f, k
		}
	}
	hk := helperKey{obj, lenient, instanceKey(n)}
	f, typ := e.plan.keyFacts[hk], types.TypeString(n, nil)
	if f == nil || f.problems != nil {
		return "", f, hk
	}
	name := e.plan.helper(keyKind(hk), typ).Name
	if name == "" {
		e.pi.d.add(token.Position{Filename: e.pi.out}, "internal error: the key helper of %s is not in the plan", typ)
		return "", f, hk
	}
	if e.keysWritten[hk] {
		return name, f, hk
	}
	e.keysWritten[hk] = true
	w := &writer{e: e, b: id("b"), n: namer{"b": true, "v": true}, raw: n, lenient: lenient, payload: lenient}
	body, ok := w.write(val{e: id("v"), ptr: true}, n, root, nil, false)
	if !ok {
		e.pi.d.add(token.Position{Filename: e.pi.out}, "internal error: the key helper of %s cannot be written, which the analysis did not decide", typ)
	}
	if e.plan.helper(keyKind(hk), typ).Recursive {
		// A value of a recursive type can nest without end (a cycle):
		// bound it, so a cycle is ErrInvalidKey, not a stack overflow.
		body = append(depthGuard("b"), body...)
	}
	// The name says what the helper does; a doc line says only what it
	// leaves out, which a reviewer must see.
	decl := jen.Null()
	if len(w.tagged) > 0 {
		decl = jen.Commentf("%s writes the key material of %s. Not keyed (tagged idem:\"-\"): %s.", name, e.pi.typeString(n), strings.Join(w.tagged, ", ")).Line()
	}
	decl.Func().Id(name).Params(jen.Id("b").Op("*").Add(e.qual(implPkg, "KeyBuilder")), jen.Id("v").Op("*").Add(e.typ(n))).Block(body...)
	e.helperDecls = append(e.helperDecls, helperDecl{name: name, code: decl})
	return name, f, hk
}

// keyHelpersWritten are the key helpers of the plan as the file holds
// them: those written and those refused (by the plan's facts), in the
// plan's order, then any written that the plan does not list. Tests
// compare them with the plan (helpersWritten).
func (e *emitter) keyHelpersWritten() []helperPlan {
	var out []helperPlan
	seen := map[helperKey]bool{}
	for _, h := range e.plan.Helpers {
		for hk, f := range e.plan.keyFacts {
			if written := e.keysWritten[hk]; keyKind(hk) == h.Kind && f.typ == h.Type && (written || f.problems != nil) {
				out, seen[hk] = append(out, h), true
			}
		}
	}
	for hk := range e.keysWritten {
		if !seen[hk] {
			out = append(out, helperPlan{Kind: keyKind(hk), Type: "unplanned " + types.TypeString(hk.obj.Type(), nil) + hk.inst})
		}
	}
	return out
}

// codecHelpersWritten are the codec helpers of the plan as the file holds
// them: written, or failed and not written, in the plan's order; in a
// file refused (a wrapper that reaches a helper may be the reason) also
// those not written. Tests compare them with the plan (helpersWritten).
func (e *emitter) codecHelpersWritten(refused bool) []helperPlan {
	var out []helperPlan
	for _, h := range e.plan.Helpers {
		written := e.codecWritten[h.Type]
		if h.Kind == codecKind(h.Type) && (written != h.Failed || refused && !written) {
			out = append(out, h)
		}
	}
	return out
}

// siteAt is sites[i], nil past its end.
func siteAt(sites []*keyWalk, i int) *keyWalk {
	if i < len(sites) {
		return sites[i]
	}
	return nil
}

// plannedKeySite returns what the analysis decided the key refuses and
// leaves out at path (x.plan.keys), which the wrapper reports and its doc
// line names; a writer that wrote (good) what it refuses, or refused
// what it did not, is reported as an idemgen defect.
func (e *emitter) plannedKeySite(x *fn, site *keyWalk, good bool, path string) *keyWalk {
	if site == nil {
		site = &keyWalk{}
	}
	if good == (len(site.problems) > 0) {
		e.pi.d.add(e.pi.fset.Position(x.pos), "internal error: %s: the key of %s is written: %v, which the analysis decided otherwise (%v)",
			x.what(), path, good, site.problems)
	}
	return site
}
