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

// readFields records that the key code reads the fields of n.
func (e *emitter) readFields(n *types.Named) {
	if _, ok := n.Underlying().(*types.Struct); !ok {
		return
	}
	if mentionsTypeParam(n) {
		e.readGeneric(n) // render_generics.go
		return
	}
	if n.TypeArgs().Len() > 0 {
		e.instRead[instanceKey(n)] = n // each instance has fields of its own
		return
	}
	e.fieldsRead[n.Obj()] = n
}

// readPath records the structs a key=, exclude= or order= path reads.
func (e *emitter) readPath(kp keyPath) {
	for _, t := range kp.structs {
		if p, ok := types.Unalias(t).Underlying().(*types.Pointer); ok {
			t = p.Elem()
		}
		if n, ok := types.Unalias(t).(*types.Named); ok {
			e.readFields(n)
		}
	}
}

// driftCheck is one drift self-check, sorted by name.
type driftCheck struct {
	name string
	code []jen.Code
}

// driftChecks adds the drift self-checks to the file's checks, sorted.
func (e *emitter) driftChecks() {
	var checks []driftCheck
	for _, n := range e.readStructs() {
		obj := n.Obj()
		if !e.pi.nameable(obj) || !e.renderable(n) {
			continue // the file cannot name it: nothing to check it with
		}
		if c, ok := e.wholeCheck(n); ok {
			checks = append(checks, c)
		} else if c, ok := e.fieldCheck(n); ok {
			checks = append(checks, c)
		}
	}
	sort.SliceStable(checks, func(i, j int) bool { return checks[i].name < checks[j].name })
	for _, c := range checks {
		e.checks = append(e.checks, c.code...)
	}
	e.checkFuncs = append(e.checkFuncs, e.genericDrift()...)
	e.pins()
}

// readStructs are the struct types the generated code reads, in the order
// their checks' names are handed out (two packages may both have an
// ext.Options): by package path, then type name. Instances of generic
// types are checked each (Opt[int64] and Opt[string] have different
// fields), after their origin's name.
func (e *emitter) readStructs() []*types.Named {
	read := make([]*types.Named, 0, len(e.fieldsRead)+len(e.instRead))
	for _, n := range e.fieldsRead {
		read = append(read, n)
	}
	for _, n := range e.instRead {
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
func (e *emitter) driftSortKey(n *types.Named) string {
	obj, prefix := n.Obj(), ""
	if obj.Pkg() != e.pi.pkg.Types {
		prefix = upperFirst(obj.Pkg().Name())
	}
	return prefix + upperFirst(obj.Name()) + e.instanceSuffix(n) + " " + obj.Pkg().Path()
}

// wholeCheck converts a value of n to the field list it was generated
// for; false if the file cannot spell every field.
func (e *emitter) wholeCheck(n *types.Named) (driftCheck, bool) {
	st := n.Underlying().(*types.Struct)
	for i := 0; i < st.NumFields(); i++ {
		f := st.Field(i)
		if (!f.Exported() && f.Pkg() != e.pi.pkg.Types) || !e.renderable(f.Type()) {
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
func (e *emitter) fieldCheck(n *types.Named) (driftCheck, bool) {
	st := n.Underlying().(*types.Struct)
	v := "fieldsChanged_runGoGenerate"
	var results, refs []jen.Code
	for i := 0; i < st.NumFields(); i++ {
		f := st.Field(i)
		if !f.Exported() || !e.renderable(f.Type()) {
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

// renderable reports whether the generated file can spell t: every named
// type in it is one the file can name.
func (e *emitter) renderable(t types.Type) bool {
	switch t := t.(type) {
	case *types.Alias:
		if obj := t.Obj(); obj.Pkg() == nil || obj.Pkg() == e.pi.pkg.Types || (obj.Exported() && e.pi.nameable(obj)) {
			return true
		}
		return e.renderable(types.Unalias(t))
	case *types.Basic:
		return true
	case *types.Named:
		if t.Obj().Pkg() == nil {
			return true // error
		}
		if !e.pi.nameable(t.Obj()) {
			if a, _ := e.pi.aliasFor(t); a == nil {
				return false
			}
		}
		for i := 0; i < t.TypeArgs().Len(); i++ {
			if !e.renderable(t.TypeArgs().At(i)) {
				return false
			}
		}
		return true
	}
	switch s := shapeOf(t); s.kind {
	case kindPointer, kindSlice, kindArray, kindChan:
		return e.renderable(s.elem)
	case kindMap:
		return e.renderable(s.key) && e.renderable(s.elem)
	case kindFunc:
		for _, tup := range []*types.Tuple{s.signature.Params(), s.signature.Results()} {
			for i := 0; i < tup.Len(); i++ {
				if !e.renderable(tup.At(i).Type()) {
					return false
				}
			}
		}
		return true
	case kindStruct:
		return e.allSpelled(s.strct.NumFields(), func(i int) types.Object { return s.strct.Field(i) })
	case kindInterface:
		return e.allSpelled(s.iface.NumMethods(), func(i int) types.Object { return s.iface.Method(i) })
	}
	return false
}

// allSpelled reports whether the file can spell each of n fields or
// methods: visible from the package, of a type it can spell.
func (e *emitter) allSpelled(n int, at func(int) types.Object) bool {
	for i := 0; i < n; i++ {
		o := at(i)
		if (!o.Exported() && o.Pkg() != e.pi.pkg.Types) || !e.renderable(o.Type()) {
			return false
		}
	}
	return true
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

// pinAlias records that the generated code relies on what alias t stands
// for; other types are ignored, and so are aliases of structs (their
// helpers take the struct type itself) and interfaces (not converted).
func (e *emitter) pinAlias(t types.Type) {
	a, ok := t.(*types.Alias)
	if !ok || a.TypeArgs().Len() > 0 {
		return
	}
	switch types.Unalias(a).Underlying().(type) {
	case *types.Struct, *types.Interface:
		return
	}
	if obj := a.Obj(); e.pinnable(obj) && (obj.Exported() || obj.Pkg() == e.pi.pkg.Types) && e.pi.nameable(obj) {
		e.pinned[obj] = a
	}
}

// pinNamed records that the generated code relies on n's underlying type
// (structs are checked by their field lists, interfaces are not converted).
func (e *emitter) pinNamed(n *types.Named) {
	switch n.Underlying().(type) {
	case *types.Struct, *types.Interface:
		return
	}
	if obj := n.Obj(); e.pinnable(obj) && n.TypeArgs().Len() == 0 && e.pi.nameable(obj) {
		e.pinned[obj] = n
	}
}

// pinnable: declared in a package (not byte, rune, any, error), and not
// the standard library's.
func (e *emitter) pinnable(obj *types.TypeName) bool {
	return obj.Pkg() != nil && !e.pi.std.has(obj.Pkg())
}

// pins adds the checks pinning e.pinned to the file's, sorted as
// driftChecks.
func (e *emitter) pins() {
	objs := make([]*types.TypeName, 0, len(e.pinned))
	for obj := range e.pinned {
		objs = append(objs, obj)
	}
	sort.Slice(objs, func(i, j int) bool {
		if pi, pj := objs[i].Pkg().Path(), objs[j].Pkg().Path(); pi != pj {
			return pi < pj
		}
		return objs[i].Name() < objs[j].Name()
	})
	for _, obj := range objs {
		t := e.pinned[obj]
		if a, ok := t.(*types.Alias); ok {
			to := types.Unalias(a)
			if !e.renderable(to) {
				continue
			}
			e.typedChecks = append(e.typedChecks, jen.Id("_").Op("*").Add(e.typ(to)).Op("=").New(e.typ(a)))
			continue
		}
		u := t.Underlying()
		if !e.renderable(u) {
			continue
		}
		e.checks = append(e.checks, jen.Id("_").Op("=").Parens(jen.Op("*").Add(e.typ(u))).Call(jen.New(e.typ(t))))
	}
}
