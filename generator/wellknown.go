package generator

import (
	"go/token"
	"go/types"
)

// wellKnown holds the types the analysis recognises by identity or by
// method set.
type wellKnown struct {
	keyer             *types.Interface // idem.Keyer: IdemKey() any
	binaryMarshaler   *types.Interface
	binaryUnmarshaler *types.Interface
	textMarshaler     *types.Interface
	textUnmarshaler   *types.Interface
	jsonMarshaler     *types.Interface
	jsonUnmarshaler   *types.Interface
	// protoMessage is ProtoReflect() protoreflect.Message, the method set
	// of every google.golang.org/protobuf message; nil if the package
	// cannot see protoreflect (then no type can have it).
	protoMessage *types.Interface
}

// protoPkg is where the generated code finds proto.MarshalOptions.
var protoPkg = types.NewPackage("google.golang.org/protobuf/proto", "proto")

const protoreflectPath = "google.golang.org/protobuf/reflect/protoreflect"

var (
	byteSlice = types.NewSlice(types.Typ[types.Byte])
	errorType = types.Universe.Lookup("error").Type()
	anyType   = types.Universe.Lookup("any").Type()
)

func method(name string, params, results []types.Type) *types.Func {
	vars := func(ts []types.Type) *types.Tuple {
		vs := make([]*types.Var, len(ts))
		for i, t := range ts {
			vs[i] = types.NewParam(token.NoPos, nil, "", t)
		}
		return types.NewTuple(vs...)
	}
	return types.NewFunc(token.NoPos, nil, name, types.NewSignatureType(nil, nil, nil, vars(params), vars(results), false))
}

func iface(ms ...*types.Func) *types.Interface {
	return types.NewInterfaceType(ms, nil).Complete()
}

func newWellKnown(pkg *types.Package) *wellKnown {
	w := &wellKnown{
		binaryMarshaler:   iface(method("MarshalBinary", nil, []types.Type{byteSlice, errorType})),
		binaryUnmarshaler: iface(method("UnmarshalBinary", []types.Type{byteSlice}, []types.Type{errorType})),
		textMarshaler:     iface(method("MarshalText", nil, []types.Type{byteSlice, errorType})),
		textUnmarshaler:   iface(method("UnmarshalText", []types.Type{byteSlice}, []types.Type{errorType})),
		jsonMarshaler:     iface(method("MarshalJSON", nil, []types.Type{byteSlice, errorType})),
		jsonUnmarshaler:   iface(method("UnmarshalJSON", []types.Type{byteSlice}, []types.Type{errorType})),
		keyer:             iface(method("IdemKey", nil, []types.Type{anyType})),
	}
	if pr := findPackage(pkg, protoreflectPath, map[*types.Package]bool{}); pr != nil {
		if m, ok := pr.Scope().Lookup("Message").(*types.TypeName); ok {
			w.protoMessage = iface(method("ProtoReflect", nil, []types.Type{m.Type()}))
		}
	}
	return w
}

// findPackage looks for path among the packages p imports, transitively.
func findPackage(p *types.Package, path string, seen map[*types.Package]bool) *types.Package {
	if p.Path() == path {
		return p
	}
	seen[p] = true
	for _, q := range p.Imports() {
		if !seen[q] {
			if r := findPackage(q, path, seen); r != nil {
				return r
			}
		}
	}
	return nil
}

func (w *wellKnown) isContext(t types.Type) bool { return isNamed(t, "context", "Context") }

func isNamed(t types.Type, pkg, name string) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == pkg && n.Obj().Name() == name
}

// implements reports whether t or *t implements i with methods of its
// own, and whether it needs the pointer. A method promoted from an
// embedded field does not count: it would stand for the whole struct
// (struct{ time.Time; ID string } would be keyed, and stored, by its
// time alone), so such a struct is keyed and stored by its fields, the
// embedded one through its own method.
func implements(t types.Type, i *types.Interface) (ok, ptr bool) {
	if i == nil {
		return false, false
	}
	if types.Implements(t, i) {
		return !promoted(t, i), false
	}
	if _, isPtr := t.Underlying().(*types.Pointer); !isPtr && !types.IsInterface(t) {
		if types.Implements(types.NewPointer(t), i) {
			return !promoted(types.NewPointer(t), i), true
		}
	}
	return false, false
}

// promoted reports whether t has one of i's methods only through an
// embedded field.
func promoted(t types.Type, i *types.Interface) bool {
	if types.IsInterface(t) {
		return false
	}
	for m := range i.Methods() {
		if _, index, _ := types.LookupFieldOrMethod(t, true, m.Pkg(), m.Name()); len(index) > 1 {
			return true
		}
	}
	return false
}
