package generator

import (
	"fmt"
	"go/types"
	"reflect"
)

// Questions about how the result codec stores a type, which the codec
// generator (render_codec*.go) and the drift analysis (analyze_reach.go)
// both ask.

// lossyPair says why t is refused: a standard library type whose only way
// to be stored is a marshaling pair that does not give back the value it
// was given; "" for any other type.
func lossyPair(pi *pkgInfo, t types.Type) string {
	switch {
	case isNamed(t, "regexp", "Regexp"):
		return "regexp.Regexp's MarshalText drops CompilePOSIX and Longest (return the expression's source instead)"
	case isNamed(t, "crypto/sha3", "SHA3"), isNamed(t, "crypto/sha3", "SHAKE"):
		return pi.typeString(t) + "'s UnmarshalBinary takes only the state of the function its receiver was made for, which a stored record does not say (return the sum instead)"
	}
	return ""
}

// storage is how a value is stored by methods rather than by its shape:
// a url.Userinfo by its accessors, a protobuf message, a marshaling pair.
type storage struct {
	userinfo, proto    bool
	marshal, unmarshal string
}

// storedBy is how t is stored by methods; zero if it is not.
func (pi *pkgInfo) storedBy(t types.Type) storage {
	if isNamed(t, "net/url", "Userinfo") {
		return storage{userinfo: true}
	}
	if shapeOf(t).kind == kindPointer || types.IsInterface(t) {
		return storage{}
	}
	// protobuf messages: *M has ProtoReflect.
	if pm, ptr := implements(t, pi.types.protoMessage); pm && ptr {
		return storage{proto: true}
	}
	if m, u, ok := pi.pair(t); ok {
		return storage{marshal: m, unmarshal: u}
	}
	return storage{}
}

// pairs are the marshaling method pairs a type may bring, in order of
// preference; a few standard library types are stored otherwise (see
// lossyPair and the cases below).
func (pi *pkgInfo) pair(t types.Type) (marshal, unmarshal string, ok bool) {
	switch {
	case isNamed(t, "encoding/json", "RawMessage"), isNamed(t, "net", "IP"):
		// Their pairs turn nil into null (RawMessage) and empty into nil
		// (both), and a 4-byte net.IP into 16 bytes: stored as the bytes
		// they are.
		return "", "", false
	case isNamed(t, "net/url", "URL"):
		// url.Parse normalises what MarshalBinary (String) writes: a
		// scheme's case, a path's leading slash, RawPath. Stored by its
		// fields, the user info by its accessors (userinfo).
		return "", "", false
	case isNamed(t, "math/big", "Float"):
		// MarshalText writes the shortest decimal and UnmarshalText parses
		// it at 64 bits; the gob pair keeps the precision, rounding mode,
		// accuracy and every mantissa bit.
		return "GobEncode", "GobDecode", true
	}
	w := pi.types
	for _, p := range []struct {
		m, u *types.Interface
		mn   string
		un   string
	}{
		{w.binaryMarshaler, w.binaryUnmarshaler, "MarshalBinary", "UnmarshalBinary"},
		{w.jsonMarshaler, w.jsonUnmarshaler, "MarshalJSON", "UnmarshalJSON"},
		{w.textMarshaler, w.textUnmarshaler, "MarshalText", "UnmarshalText"},
	} {
		// implements counts a type's own methods only: a pair promoted
		// from an embedded field marshals that field alone.
		if m, _ := implements(t, p.m); m {
			if u, _ := implements(t, p.u); u {
				return p.mn, p.un, true
			}
		}
	}
	return "", "", false
}

// hasCodecHelper reports whether t is stored by helpers of its own: a
// named composite type, or an interface stored as a union.
func (pi *pkgInfo) hasCodecHelper(t types.Type) (*types.Named, bool) {
	named, ok := t.(*types.Named)
	if !ok {
		return nil, false
	}
	switch shapeOf(t).kind {
	case kindStruct, kindSlice, kindMap, kindArray, kindPointer:
		return named, true
	case kindInterface:
		return named, len(pi.variants(named)) > 0
	}
	return nil, false
}

// codecHelperType reports whether a value of t is stored by the helpers
// of its type (a named composite type, or a union, that the generated
// file can name and that brings no marshaling pair), and returns the type.
func (pi *pkgInfo) codecHelperType(t types.Type) (*types.Named, bool) {
	u := types.Unalias(t)
	if !pi.renderable(t) || lossyPair(pi, u) != "" || pi.storedBy(u) != (storage{}) {
		return nil, false
	}
	return pi.hasCodecHelper(u)
}

// codecHelperKey names the codec helpers of n, once per file: instances
// of a generic type differ, and a helper that omit= specialises is the
// Spec's (specBase) own.
func codecHelperKey(n *types.Named, specBase string, omit omitTree) string {
	key := types.TypeString(n, nil)
	if len(omit) > 0 {
		key += " for " + specBase + " omitting " + fmt.Sprint(omit) // fmt sorts map keys
	}
	return key
}

// unstorable says why no codec stores values of t by their shape sh:
// funcs, channels, maps of other keys than strings and numbers,
// interfaces other than error, any and unions; "" for the others.
func (pi *pkgInfo) unstorable(t types.Type, sh shape) string {
	switch sh.kind {
	case kindBasic:
		if m, _, _ := basicCodec(sh.basic); m == "" {
			return sh.basic.String() + " cannot be stored"
		}
	case kindPointer, kindSlice, kindArray, kindStruct:
	case kindMap:
		if kb, ok := sh.key.Underlying().(*types.Basic); !ok || kb.Info()&types.IsOrdered == 0 {
			return "map key " + pi.typeString(sh.key) + " is not a string or a number (only those keys are stored, in sorted order)"
		}
	case kindInterface:
		n, named := t.(*types.Named)
		if !types.Identical(t, errorType) && !(named && len(pi.variants(n)) > 0) && !sh.iface.Empty() {
			return "interface " + pi.typeString(t) + " cannot be decoded to its dynamic type"
		}
	case kindFunc:
		return "func values cannot be stored"
	case kindChan:
		return "channels cannot be stored"
	default:
		return "type " + pi.typeString(t) + " cannot be stored"
	}
	return ""
}

// basicCodec is the Encoder and Decoder method of a basic type, the type
// they take and return, and the bits the Decoder checks a number against
// (0: none); "" for a type that is not stored.
func basicCodec(u *types.Basic) (method, typ string, bits int) {
	bits = 64
	switch u.Kind() {
	case types.Int8, types.Uint8:
		bits = 8
	case types.Int16, types.Uint16:
		bits = 16
	case types.Int32, types.Uint32:
		bits = 32
	}
	info := u.Info()
	switch {
	case u.Kind() == types.Bool:
		return "Bool", "bool", 0
	case info&types.IsString != 0:
		return "String", "string", 0
	case info&types.IsUnsigned != 0:
		return "Uint", "uint64", bits
	case info&types.IsInteger != 0:
		return "Int", "int64", bits
	case u.Kind() == types.Float32:
		return "Float32", "float32", 0
	case info&types.IsFloat != 0:
		return "Float64", "float64", 0
	case info&types.IsComplex != 0:
		return "Complex", "complex128", 0
	}
	return "", "", 0
}

// orderedCoder is basicCoder for the keys of EncMap, which sorts them:
// strings and float64s.
func orderedCoder(t types.Type) string {
	if c := basicCoder(t); c != "Bool" {
		return c
	}
	return ""
}

// basicCoder names the idemimpl encoder and decoder (EncString and
// DecString…) of the values of a predeclared basic type, for EncPtr and
// EncList; "" for other types, and for integers, whose decoders take the
// bits a number must fit in.
func basicCoder(t types.Type) string {
	b, ok := types.Unalias(t).(*types.Basic)
	if !ok {
		return ""
	}
	switch m, _, _ := basicCodec(b); m {
	case "String", "Bool", "Float64":
		return m
	}
	return ""
}

// isByte: the element type of []byte, not of a named byte type's slice.
func isByte(t types.Type) bool {
	b, ok := t.(*types.Basic)
	return ok && b.Kind() == types.Byte
}

// jsonSkipped reports whether a struct tag keeps its field out of the
// type's JSON form (json:"-").
func jsonSkipped(tag string) bool {
	return reflect.StructTag(tag).Get("json") == "-"
}

// storable is false for the types no codec can rebuild from bytes: an
// interface (its dynamic type is not in the record), a func or a channel,
// or a pointer to one. Another package's struct field of such a type
// that the package tags json:"-" (stripe's Error.Err, say) is left out
// of the stored result instead of refusing the whole result: its own
// package keeps it out of its wire form too.
func storable(t types.Type) bool {
	for {
		p, ok := t.Underlying().(*types.Pointer)
		if !ok {
			break
		}
		t = p.Elem()
	}
	switch t.Underlying().(type) {
	case *types.Interface, *types.Signature, *types.Chan:
		return false
	}
	return true
}

// opaque reports whether t is another package's struct held by value
// whose data is all unexported and that has no marshaling pair: no
// codec can store any of it.
func (pi *pkgInfo) opaque(t types.Type) bool {
	n, ok := t.(*types.Named)
	if !ok || n.Obj().Pkg() == nil || n.Obj().Pkg() == pi.pkg.Types {
		return false
	}
	st, ok := n.Underlying().(*types.Struct)
	if !ok {
		return false
	}
	if _, _, ok := pi.pair(t); ok || lossyPair(pi, t) != "" {
		return false
	}
	data := false
	for i := 0; i < st.NumFields(); i++ {
		f := st.Field(i)
		if f.Name() == "_" || zeroSize(f.Type()) {
			continue
		}
		if f.Exported() {
			return false
		}
		data = true
	}
	return data
}

// errPackages are the packages whose error types idemErrors restores:
// this package, the wrapped functions' packages and those of the result
// types (behind pointers, slices, arrays and maps).
func (pi *pkgInfo) errPackages(fns []*fn) []*types.Package {
	seen := map[*types.Package]bool{}
	out := []*types.Package{pi.pkg.Types}
	seen[pi.pkg.Types] = true
	add := func(p *types.Package) {
		if p != nil && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, x := range fns {
		add(x.obj.Pkg())
		for _, t := range x.result {
			for {
				switch u := types.Unalias(t).(type) {
				case *types.Pointer, *types.Slice, *types.Array, *types.Map:
					t = u.(interface{ Elem() types.Type }).Elem()
					continue
				case *types.Named:
					add(u.Obj().Pkg())
				}
				break
			}
		}
	}
	return out
}

var errorIface = errorType.Underlying().(*types.Interface)

// fieldKind is how the codec stores a field of a struct.
type fieldKind int

const (
	fieldStored fieldKind = iota
	// fieldOpaque: another package's state held by value, none of it
	// exported (an AWS output's ResultMetadata): replays hold its zero
	// value, which is usable, and the doc line names the type. A result
	// that is such a value is still refused.
	fieldOpaque
	// fieldJSONSkipped: another package's field that cannot be stored and
	// that the package keeps out of its JSON (storable).
	fieldJSONSkipped
	// fieldEmpty: blank, or no data.
	fieldEmpty
	// fieldLossyOwner: an unexported field of another package's struct,
	// whose replays lose it (the doc line names the struct).
	fieldLossyOwner
	// fieldRefused: an unexported field of the package's own struct.
	fieldRefused
)

// fieldStorage is how the codec stores field i of struct u, of the
// package's own type if own; sub are the field's omit= paths.
func (pi *pkgInfo) fieldStorage(u *types.Struct, i int, own bool, sub omitTree) fieldKind {
	f := u.Field(i)
	switch {
	case f.Exported() && pi.opaque(f.Type()) && len(sub) == 0:
		return fieldOpaque
	case !own && f.Exported() && jsonSkipped(u.Tag(i)) && !storable(f.Type()):
		return fieldJSONSkipped
	case f.Exported():
		return fieldStored
	case f.Name() == "_" || zeroSize(f.Type()):
		return fieldEmpty
	case !own:
		return fieldLossyOwner
	case !(f.Embedded() && isStruct(f.Type())):
		return fieldRefused
	}
	return fieldStored
}

// jsonWritten reports whether a value of n may be written by a MarshalJSON
// of n's package: n's own, or that of a type of its package that holds an
// n (through fields, pointers, slices, arrays, maps). Such a method can
// read n's unexported fields, so a json:"-" tag on one of them says
// nothing about what the package sends.
func (pi *pkgInfo) jsonWritten(n *types.Named) bool {
	pkg := n.Obj().Pkg()
	if pkg == nil {
		return true
	}
	if pi.jsonReach == nil {
		pi.jsonReach = map[*types.Package]map[*types.TypeName]bool{}
	}
	held, ok := pi.jsonReach[pkg]
	if !ok {
		held = map[*types.TypeName]bool{}
		marshalJSON := func(t types.Type) bool {
			for _, t := range []types.Type{t, types.NewPointer(t)} {
				if m, _, _ := types.LookupFieldOrMethod(t, true, pkg, "MarshalJSON"); m != nil {
					return true
				}
			}
			return false
		}
		var walk func(t types.Type)
		walk = func(t types.Type) {
			switch t := t.(type) {
			case *types.Named:
				if t.Obj().Pkg() != pkg || held[t.Obj()] {
					return
				}
				held[t.Obj()] = true
				walk(t.Underlying())
			case *types.Pointer:
				walk(t.Elem())
			case *types.Slice:
				walk(t.Elem())
			case *types.Array:
				walk(t.Elem())
			case *types.Map:
				walk(t.Key())
				walk(t.Elem())
			case *types.Struct:
				for i := 0; i < t.NumFields(); i++ {
					walk(t.Field(i).Type())
				}
			}
		}
		scope := pkg.Scope()
		for _, name := range scope.Names() {
			if tn, ok := scope.Lookup(name).(*types.TypeName); ok && marshalJSON(tn.Type()) {
				walk(tn.Type())
			}
		}
		pi.jsonReach[pkg] = held
	}
	return held[n.Obj()]
}
