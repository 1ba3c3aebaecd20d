package generator

import (
	"go/types"
	"reflect"
	"strings"
)

// storable reports why values of t would not come back equal after a round
// trip through encoding/json (the default codec): one message per problem,
// each naming the offending field path; none if they would.
func (pi *pkgInfo) storable(t types.Type) []string {
	var msgs []string
	pi.storableAt(t, "", map[types.Type]bool{}, &msgs)
	return msgs
}

func (pi *pkgInfo) storableAt(t types.Type, path string, seen map[types.Type]bool, msgs *[]string) {
	at := func(msg string) {
		if path != "" {
			msg = path + ": " + msg
		}
		*msgs = append(*msgs, msg)
	}
	t = types.Unalias(t)
	if seen[t] {
		return // recursive types: checked on the first visit
	}
	if _, named := t.(*types.Named); named {
		seen[t] = true
	}
	w := pi.types
	// A type that marshals itself is trusted to round-trip.
	if m, _ := implements(t, w.jsonMarshaler); m {
		if u, _ := implements(t, w.jsonUnmarshaler); !u && !types.Implements(types.NewPointer(t), w.jsonUnmarshaler) {
			at(pi.typeString(t) + " implements json.Marshaler but not json.Unmarshaler")
		}
		return
	}
	if m, _ := implements(t, w.textMarshaler); m {
		if !types.Implements(types.NewPointer(t), w.textUnmarshaler) {
			at(pi.typeString(t) + " implements encoding.TextMarshaler but not encoding.TextUnmarshaler")
		}
		return
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		switch {
		case u.Info()&types.IsComplex != 0:
			at("encoding/json cannot encode " + u.Name())
		case u.Kind() == types.UnsafePointer:
			at("unsafe.Pointer cannot be stored")
		}
	case *types.Pointer:
		pi.storableAt(u.Elem(), path, seen, msgs)
	case *types.Slice:
		pi.storableAt(u.Elem(), path+"[]", seen, msgs)
	case *types.Array:
		pi.storableAt(u.Elem(), path+"[]", seen, msgs)
	case *types.Map:
		k := u.Key()
		if m, _ := implements(k, w.textMarshaler); !m {
			if b, ok := k.Underlying().(*types.Basic); !ok || b.Info()&(types.IsString|types.IsInteger) == 0 {
				at("map key " + pi.typeString(k) + " is not a string, an integer or an encoding.TextMarshaler")
				return
			}
		}
		pi.storableAt(u.Elem(), path+"[]", seen, msgs)
	case *types.Struct:
		for i := 0; i < u.NumFields(); i++ {
			f := u.Field(i)
			fp := joinPath(path, f.Name())
			tag := reflect.StructTag(u.Tag(i)).Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if name == "-" && opts == "" {
				if f.Exported() {
					*msgs = append(*msgs, fp+": tagged json:\"-\", so encoding/json drops it (untag it or return it separately)")
				}
				continue
			}
			if !f.Exported() && !(f.Embedded() && isStruct(f.Type())) {
				if f.Name() == "_" {
					continue
				}
				*msgs = append(*msgs, fp+": unexported field, encoding/json drops it (export it or implement json.Marshaler and json.Unmarshaler)")
				continue
			}
			if strings.Contains(","+opts+",", ",omitempty,") {
				switch f.Type().Underlying().(type) {
				case *types.Slice, *types.Map:
					*msgs = append(*msgs, fp+": omitempty turns an empty "+pi.typeString(f.Type())+" into nil on replay (use omitzero)")
				}
			}
			pi.storableAt(f.Type(), fp, seen, msgs)
		}
	case *types.Interface:
		at("interface " + pi.typeString(t) + " cannot be decoded to its dynamic type")
	case *types.Signature:
		at("func values cannot be stored")
	case *types.Chan:
		at("channels cannot be stored")
	case *types.TypeParam:
		at("type parameters are not supported")
	default:
		at("type " + pi.typeString(t) + " cannot be stored")
	}
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
