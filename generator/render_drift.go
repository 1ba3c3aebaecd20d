package generator

import (
	"go/types"
	"sort"

	"github.com/dave/jennifer/jen"
)

// The drift self-check. The key code reads struct fields one by one, so a
// field added to a keyed struct after generation would compile and be left
// out of the key. For every struct type whose fields the generated code
// reads, the file converts a value of the struct to the field list it was
// generated for (an unnamed struct type): a conversion between struct types
// needs the same field names and types in the same order (tags aside), so
// the build fails at that line — whose comment says run go generate — when
// a field is gained, lost, renamed or retyped.
//
// Another package's struct with unexported fields (which the file cannot
// name), or with fields of types the file cannot name, is checked field by
// field instead: each exported field it can name must still exist with the
// same type. A field gained there cannot be seen by the compiler; idemgen
// -check (CI) sees it.

// staleSuffix ends the names the field-by-field and generic drift checks
// declare, so the compiler's message itself says what to do.
const staleSuffix = "_fieldsChanged_runGoGenerate"

// driftCheck is one drift self-check, sorted by name.
type driftCheck struct {
	name string
	code []jen.Code
}

// driftChecks are the drift self-checks of d: the conversions that must
// compile (structs' field lists and pinned types, sorted), the typed
// ones (aliases) and those of generic code, a function each.
func (e *fileWriter) driftChecks(d *driftFacts) (checks, typed, funcs []jen.Code) {
	var byName []driftCheck
	for _, n := range readStructs(d) {
		obj := n.Obj()
		if !e.pi.nameable(obj) || !e.pi.renderable(n) {
			continue // the file cannot name it: nothing to check it with
		}
		if c, ok := e.wholeCheck(n); ok {
			byName = append(byName, c)
		} else if c, ok := e.fieldCheck(n); ok {
			byName = append(byName, c)
		}
	}
	sort.SliceStable(byName, func(i, j int) bool { return byName[i].name < byName[j].name })
	for _, c := range byName {
		checks = append(checks, c.code...)
	}
	funcs = e.genericDrift(d.generic)
	pinChecks, typed := e.pins(d.pinned)
	return append(checks, pinChecks...), typed, funcs
}

// readStructs are the struct types d reads, in the order their checks'
// names are handed out (two packages may both have an ext.Options): by
// package path, then type name. Instances of generic types are checked
// each (Opt[int64] and Opt[string] have different fields), after their
// origin's name.
func readStructs(d *driftFacts) []*types.Named {
	read := make([]*types.Named, 0, len(d.fields)+len(d.instances))
	for _, n := range d.fields {
		read = append(read, n)
	}
	for _, n := range d.instances {
		read = append(read, n)
	}
	sort.Slice(read, func(i, j int) bool {
		oi, oj := read[i].Obj(), read[j].Obj()
		if pi, pj := oi.Pkg().Path(), oj.Pkg().Path(); pi != pj {
			return pi < pj
		}
		if oi.Name() != oj.Name() {
			return oi.Name() < oj.Name()
		}
		return instanceKey(read[i]) < instanceKey(read[j])
	})
	return read
}

// driftSortKey orders the checks: by type name, the package's own types
// before another package's of the same name.
func (e *fileWriter) driftSortKey(n *types.Named) string {
	obj, prefix := n.Obj(), ""
	if obj.Pkg() != e.pi.pkg.Types {
		prefix = upperFirst(obj.Pkg().Name())
	}
	return prefix + upperFirst(obj.Name()) + e.pi.instanceSuffix(n) + " " + obj.Pkg().Path()
}

// wholeCheck converts a value of n to the field list it was generated
// for; false if the file cannot spell every field.
func (e *fileWriter) wholeCheck(n *types.Named) (driftCheck, bool) {
	st := n.Underlying().(*types.Struct)
	for i := 0; i < st.NumFields(); i++ {
		f := st.Field(i)
		if (!f.Exported() && f.Pkg() != e.pi.pkg.Types) || !e.pi.renderable(f.Type()) {
			return driftCheck{}, false
		}
	}
	name := e.driftSortKey(n)
	fields := make([]jen.Code, st.NumFields())
	for i := range fields {
		f := st.Field(i)
		if !f.Embedded() {
			fields[i] = jen.Id(f.Name()).Add(e.typ(f.Type()))
			continue
		}
		fields[i] = e.typ(f.Type())
		if _, ok := f.Type().Underlying().(*types.Struct); ok {
			// go vet reads the tags of an untagged embedded struct's
			// fields as the outer struct's; the user tags theirs apart,
			// and "-" keeps vet out.
			fields[i].(*jen.Statement).Tag(map[string]string{"json": "-", "xml": "-"})
		}
	}
	return driftCheck{name, []jen.Code{
		jen.Id("_").Op("=").Struct(fields...).Call(e.typ(n).(*jen.Statement).Clone().Values()),
	}}, true
}

// fieldCheck checks n field by field: what can be named must be there,
// with its type; false if nothing can be named.
func (e *fileWriter) fieldCheck(n *types.Named) (driftCheck, bool) {
	st := n.Underlying().(*types.Struct)
	v := "fieldsChanged_runGoGenerate"
	var results, refs []jen.Code
	for i := 0; i < st.NumFields(); i++ {
		f := st.Field(i)
		if !f.Exported() || !e.pi.renderable(f.Type()) {
			continue
		}
		results = append(results, jen.Op("*").Add(e.typ(f.Type())))
		refs = append(refs, jen.Op("&").Id(v).Dot(f.Name()))
	}
	if len(refs) == 0 {
		return driftCheck{}, false
	}
	name := e.driftSortKey(n)
	return driftCheck{name, []jen.Code{
		jen.Id("_").Op("=").Func().Params(jen.Id(v).Op("*").Add(e.typ(n))).Params(results...).Block(
			jen.Return(refs...)),
	}}, true
}

// Types are pinned too. The generated code converts a named type to the
// basic type the runtime takes (b.Int(int64(v.Amount)), Cents(d.Int(64)))
// and ranges over named slices and maps element by element; Go allows those
// conversions between any numeric or string-like types, so a type
// redefined after generation (type Cents int64 → float64) would still
// build and silently truncate. For each named type whose underlying type
// the code relies on, the file converts a pointer to it into a pointer to
// that underlying type, which compiles only while the underlying types are
// identical (int64 is not int32, float64 or string). For an alias, a
// pointer to it is assigned to a pointer to the type it stood for, which
// needs the very same type. The standard library's types keep their
// definitions (the Go 1 promise) and are not pinned.

// pins are the checks pinning the types of pinned that the file may
// name, sorted as driftChecks: conversions, and typed assignments for
// aliases.
func (e *fileWriter) pins(pinned map[*types.TypeName]types.Type) (checks, typed []jen.Code) {
	var objs []*types.TypeName
	for obj, t := range pinned {
		_, alias := t.(*types.Alias)
		if e.pi.pinnable(obj) && e.pi.nameable(obj) && (!alias || obj.Exported() || obj.Pkg() == e.pi.pkg.Types) {
			objs = append(objs, obj)
		}
	}
	sort.Slice(objs, func(i, j int) bool {
		if pi, pj := objs[i].Pkg().Path(), objs[j].Pkg().Path(); pi != pj {
			return pi < pj
		}
		return objs[i].Name() < objs[j].Name()
	})
	for _, obj := range objs {
		t := pinned[obj]
		if a, ok := t.(*types.Alias); ok {
			if to := types.Unalias(a); e.pi.renderable(to) {
				typed = append(typed, jen.Id("_").Op("*").Add(e.typ(to)).Op("=").New(e.typ(a)))
			}
			continue
		}
		if u := t.Underlying(); e.pi.renderable(u) {
			checks = append(checks, jen.Id("_").Op("=").Parens(jen.Op("*").Add(e.typ(u))).Call(jen.New(e.typ(t))))
		}
	}
	return checks, typed
}

// genericDrift is the drift check of each instance read: inside
// a generic blank function with the wrapped function's type parameters,
// a local type holds the field list the code was generated for, and the
// instance converts to it only while its fields are the same.
// Another package's instance with unexported fields cannot be spelt
// field by field: its exported fields are checked one by one instead.
func (e *fileWriter) genericDrift(read []genericRead) []jen.Code {
	var out []jen.Code
	for _, r := range read {
		n, x := r.n, r.x
		st := n.Underlying().(*types.Struct)
		if !e.pi.nameable(n.Obj()) {
			continue
		}
		name := "idem" + upperFirst(n.Obj().Name()) + staleSuffix
		full := true
		var fields, results, refs []jen.Code
		v := "fieldsChanged_runGoGenerate"
		for i := 0; i < st.NumFields(); i++ {
			f := st.Field(i)
			renderable := e.pi.renderable(f.Type()) || mentionsTypeParam(f.Type())
			if (!f.Exported() && f.Pkg() != e.pi.pkg.Types) || !renderable {
				full = false
			}
			if f.Exported() && renderable {
				results = append(results, jen.Op("*").Add(e.typ(f.Type())))
				refs = append(refs, jen.Op("&").Id(v).Dot(f.Name()))
			}
			if f.Embedded() {
				emb := jen.Add(e.typ(f.Type()))
				if _, ok := f.Type().Underlying().(*types.Struct); ok {
					emb.Tag(map[string]string{"json": "-", "xml": "-"}) // as driftChecks does, for vet
				}
				fields = append(fields, emb)
			} else {
				fields = append(fields, jen.Id(f.Name()).Add(e.typ(f.Type())))
			}
		}
		var body []jen.Code
		switch {
		case full:
			body = []jen.Code{
				jen.Type().Id(name).Struct(fields...),
				jen.Id("_").Op("=").Id(name).Call(e.typ(n).(*jen.Statement).Clone().Values()),
			}
		case len(refs) > 0:
			body = []jen.Code{
				jen.Id("_").Op("=").Func().Params(jen.Id(v).Op("*").Add(e.typ(n))).Params(results...).Block(jen.Return(refs...)),
			}
		default:
			continue
		}
		out = append(out, jen.Func().Id("_").Types(e.typeParamDecls(x)...).Params().Block(body...))
	}
	return out
}
