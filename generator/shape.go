package generator

import "go/types"

// The generator walks types four ways: it renders them (typ, renderable),
// writes their key material (writer.write), their codecs (codecGen.enc and
// dec) and their signature skeletons (writeSkeleton). Each walker handles
// names (named types, aliases, type parameters, well-known types) its own
// way, then switches on a type's shape: what the type is below its name.
// shapeOf is that case analysis, once; each walker says what it writes for
// each kind.

// kind is what a type is below its name.
type kind int

const (
	kindOther kind = iota // a type parameter, a tuple: no walker writes one
	kindBasic
	kindPointer
	kindSlice
	kindArray
	kindMap
	kindChan
	kindStruct
	kindInterface
	kindFunc
)

// shape is a type below its name: its kind and its parts.
type shape struct {
	kind
	basic     *types.Basic     // kindBasic
	elem      types.Type       // kindPointer, kindSlice, kindArray, kindMap (its values), kindChan
	key       types.Type       // kindMap
	len       int64            // kindArray
	dir       types.ChanDir    // kindChan
	strct     *types.Struct    // kindStruct
	iface     *types.Interface // kindInterface
	signature *types.Signature // kindFunc
}

// shapeOf is the shape of t's underlying type; kindOther for a type
// parameter (its underlying type is its constraint).
func shapeOf(t types.Type) shape {
	if _, ok := t.(*types.TypeParam); ok {
		return shape{}
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		return shape{kind: kindBasic, basic: u}
	case *types.Pointer:
		return shape{kind: kindPointer, elem: u.Elem()}
	case *types.Slice:
		return shape{kind: kindSlice, elem: u.Elem()}
	case *types.Array:
		return shape{kind: kindArray, elem: u.Elem(), len: u.Len()}
	case *types.Map:
		return shape{kind: kindMap, key: u.Key(), elem: u.Elem()}
	case *types.Chan:
		return shape{kind: kindChan, elem: u.Elem(), dir: u.Dir()}
	case *types.Struct:
		return shape{kind: kindStruct, strct: u}
	case *types.Interface:
		return shape{kind: kindInterface, iface: u}
	case *types.Signature:
		return shape{kind: kindFunc, signature: u}
	}
	return shape{}
}

func isStruct(t types.Type) bool {
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	_, ok := t.Underlying().(*types.Struct)
	return ok
}

func joinPath(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}
