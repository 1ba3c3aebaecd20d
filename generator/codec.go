package generator

import (
	"fmt"
	"go/types"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/dave/jennifer/jen"
)

// Generated result codecs. Every wrapper's Spec carries an
// idemimpl.TypedCodec of its result value (the result itself, or the
// idemResult struct of several results), built from encode/decode
// functions written here: no reflection, no encoding/json. Named types get
// one pair of helpers each (idemEncT/idemDecT), shared by all wrappers of
// the package, which also makes recursive types work. The format is
// runtime/idem's (wire.go): every value carries its kind, struct fields are
// tagged by name, so added fields decode as zero, removed ones are
// skipped and retyped ones are idem.ErrResultIncompatible.

// omitTree is the omit= paths below one value: a leaf (empty, non-nil)
// leaves the value out.
type omitTree map[string]omitTree

// codecProblem is one thing of a result that cannot be stored, with the
// omit= path that lifts it.
type codecProblem struct {
	path, msg string
	// root is the path of the outermost other package's value the
	// problem is in, or of the outermost value of a recursive type it is
	// in; "" if none. Relative paths inside a helper start with "\x00".
	root string
	// cycle: the problem is inside a value of a recursive type, so an
	// omit= below root would meet it again one level deeper.
	cycle bool
}

// codecGen writes the codec of one wrapper's result value.
type codecGen struct {
	e        *emitter
	problems []codecProblem
	lossy    map[string]bool // other packages' types whose unexported state is not replayed
	// skipped: fields of other packages' structs that cannot be stored and
	// that their package keeps out of its JSON (json:"-"): not stored.
	skipped map[string]bool
	spec    string          // the Spec's base name, for helpers specialised by omit=
	errs    bool            // a value of type error is stored (its type may not be)
	unions  map[string]bool // interfaces stored as unions of their package's types (unions.go)
}

var (
	slicesPkg = types.NewPackage("slices", "slices")
	mapsPkg   = types.NewPackage("maps", "maps")
)

// fnScope hands out the local names of one generated function.
type fnScope map[string]int

func (s fnScope) get(base string) string {
	s[base]++
	if n := s[base]; n > 1 {
		return base + strconv.Itoa(n)
	}
	return base
}

func (g *codecGen) fail(path, msg, root string) {
	g.add(codecProblem{path: path, msg: msg, root: root})
}

func (g *codecGen) add(p codecProblem) {
	for _, q := range g.problems {
		if q == p {
			return // the decoder's pass meets what the encoder's did
		}
	}
	g.problems = append(g.problems, p)
}

// vx is a value in generated code: an addressable expression, or *ptr.
type vx struct {
	x   jen.Code // the expression (ptr == nil)
	ptr jen.Code // v is *ptr
	// bare is ptr without the parentheses a selector needs ((*p).F), for
	// passing the pointer on: f(*p), not f((*p)).
	bare jen.Code
}

// sel is v as the operand of a selector or index: (*p).F needs the parens
// only for indexing; a selector auto-dereferences.
func (v vx) sel(field bool) *jen.Statement {
	if v.ptr != nil {
		if field {
			return jen.Add(v.ptr)
		}
		return jen.Parens(jen.Op("*").Add(v.ptr))
	}
	return jen.Add(v.x)
}

// val is v as an operand or assignment target.
func (v vx) val() *jen.Statement {
	if v.ptr != nil {
		return jen.Op("*").Add(v.ptr)
	}
	return jen.Add(v.x)
}

// addr is &v.
func (v vx) addr() *jen.Statement {
	if v.bare != nil {
		return jen.Add(v.bare)
	}
	if v.ptr != nil {
		return jen.Add(v.ptr)
	}
	return jen.Op("&").Add(v.x)
}

func expr(c jen.Code) vx { return vx{x: c} }

// elem is *v, for v of pointer type.
func (v vx) elem() vx {
	if v.ptr != nil {
		return vx{ptr: jen.Parens(jen.Op("*").Add(v.ptr)), bare: jen.Op("*").Add(v.ptr)}
	}
	return vx{ptr: v.x}
}
func deref(c jen.Code) vx { return vx{ptr: c} }

// advicePath is the path omit= should name for a problem at path: the
// path cut before its first element of a slice, array or map (omit=
// paths go through structs and pointers only).
func advicePath(path string) string {
	if i := strings.Index(path, "[]"); i >= 0 {
		return path[:i]
	}
	return path
}

// enc returns the statements that encode v (an addressable expression) of
// type t. path names v for diagnostics; foreignAt is the path of the
// outermost other package's value on the way, if any.
func (g *codecGen) enc(t types.Type, v vx, path, foreignAt string, omit omitTree, s fnScope) []jen.Code {
	return g.code(t, v, path, foreignAt, omit, s, true)
}

func (g *codecGen) dec(t types.Type, v vx, path, foreignAt string, omit omitTree, s fnScope) []jen.Code {
	return g.code(t, v, path, foreignAt, omit, s, false)
}

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

// userinfo stores a url.Userinfo (no exported fields) by what its
// accessors return, and rebuilds it with url.User or url.UserPassword: a
// password set to "" stays set, an unset one stays unset.
func (g *codecGen) userinfo(v vx, s fnScope, encode bool) []jen.Code {
	if encode {
		at, pw, set := s.get("at"), s.get("pw"), s.get("set")
		return []jen.Code{
			jen.Id(at).Op(":=").Id("e").Dot("Struct").Call(),
			jen.Id("e").Dot("Field").Call(jen.Lit("Username")),
			jen.Id("e").Dot("String").Call(v.sel(true).Dot("Username").Call()),
			jen.If(jen.List(jen.Id(pw), jen.Id(set)).Op(":=").Add(v.sel(true)).Dot("Password").Call(), jen.Id(set)).Block(
				jen.Id("e").Dot("Field").Call(jen.Lit("Password")),
				jen.Id("e").Dot("String").Call(jen.Id(pw))),
			jen.Id("e").Dot("End").Call(jen.Id(at)),
		}
	}
	end, name, pw := s.get("end"), s.get("name"), s.get("pw")
	read := func(m string) *jen.Statement { return jen.Id("d").Dot(m).Call() }
	return []jen.Code{
		jen.Var().Id(name).String(),
		jen.Var().Id(pw).Op("*").String(),
		jen.Id(end).Op(":=").Add(read("Struct")),
		jen.For(jen.Id("d").Dot("More").Call(jen.Id(end))).Block(
			jen.Switch(jen.String().Call(read("Field"))).Block(
				jen.Case(jen.Lit("Username")).Block(jen.Id(name).Op("=").Add(read("String"))),
				jen.Case(jen.Lit("Password")).Block(jen.Id(pw).Op("=").New(jen.String()), jen.Op("*").Id(pw).Op("=").Add(read("String"))),
				jen.Default().Block(read("Skip")))),
		jen.If(jen.Id(pw).Op("!=").Nil()).Block(
			v.val().Op("=").Op("*").Add(g.e.qual(urlPkg, "UserPassword")).Call(jen.Id(name), jen.Op("*").Id(pw)),
		).Else().Block(
			v.val().Op("=").Op("*").Add(g.e.qual(urlPkg, "User")).Call(jen.Id(name))),
	}
}

var urlPkg = types.NewPackage("net/url", "url")

// pairs are the marshaling method pairs a type may bring, in order of
// preference; a few standard library types are stored otherwise (see
// lossyPair and the cases below).
func (g *codecGen) pair(t types.Type) (marshal, unmarshal string, ok bool) {
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
	w := g.e.pi.types
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

func (g *codecGen) code(t types.Type, v vx, path, foreignAt string, omit omitTree, s fnScope, encode bool) []jen.Code {
	e, pi := g.e, g.e.pi
	if !e.renderable(t) {
		g.fail(path, "type "+pi.typeString(t)+" cannot be named in the generated file (unexported, or internal to another module)", foreignAt)
		return nil
	}
	e.pinAlias(t)
	t = types.Unalias(t)
	if why := lossyPair(pi, t); why != "" {
		g.fail(path, why, foreignAt)
		return nil
	}
	if isNamed(t, "net/url", "Userinfo") {
		return g.userinfo(v, s, encode)
	}
	if _, isPtr := t.Underlying().(*types.Pointer); !isPtr && !types.IsInterface(t) {
		// protobuf messages: *M has ProtoReflect.
		if pm, ptr := implements(t, pi.types.protoMessage); pm && ptr {
			if encode {
				return one(jen.Id("e").Dot("Marshaled").Call(e.qual(protoPkg, "MarshalOptions").Values(jen.Dict{jen.Id("Deterministic"): jen.True()}).Dot("Marshal").Call(v.addr())))
			}
			return one(jen.Id("d").Dot("Unmarshaled").Call(e.qual(protoPkg, "Unmarshal").Call(jen.Id("d").Dot("Marshaled").Call(), v.addr())))
		}
		if m, u, ok := g.pair(t); ok {
			if encode {
				return one(jen.Id("e").Dot("Marshaled").Call(v.sel(true).Dot(m).Call()))
			}
			if isNamed(t, "crypto/x509", "OID") {
				// The zero OID marshals to no bytes, which UnmarshalBinary
				// refuses: no bytes stay the zero OID.
				b := s.get("b")
				return one(jen.If(jen.Id(b).Op(":=").Id("d").Dot("Marshaled").Call(), jen.Len(jen.Id(b)).Op(">").Lit(0)).Block(
					jen.Id("d").Dot("Unmarshaled").Call(v.sel(true).Dot(u).Call(jen.Id(b)))))
			}
			return one(jen.Id("d").Dot("Unmarshaled").Call(v.sel(true).Dot(u).Call(jen.Id("d").Dot("Marshaled").Call())))
		}
	}
	named, isNamed := t.(*types.Named)
	if isNamed {
		e.pinNamed(named)
	}
	if isNamed && named.Obj().Pkg() != nil && named.Obj().Pkg() != pi.pkg.Types && foreignAt == "" {
		foreignAt = path
	}
	if isNamed {
		union := types.IsInterface(named) && len(e.variants(named)) > 0
		switch t.Underlying().(type) {
		case *types.Struct, *types.Slice, *types.Map, *types.Array, *types.Pointer, *types.Interface:
			if _, iface := t.Underlying().(*types.Interface); iface && !union {
				break
			}
			name := g.helper(named, path, foreignAt, omit)
			if name == "" {
				return nil
			}
			if encode {
				return one(jen.Id("idemEnc"+name).Call(jen.Id("e"), v.addr()))
			}
			return one(jen.Id("idemDec"+name).Call(jen.Id("d"), v.addr()))
		}
	}
	return g.inline(t, v, path, foreignAt, omit, s, encode)
}

// helper makes (once) the helpers of a named type and returns their name
// suffix; "" if the type cannot be stored (problems are recorded).
func (g *codecGen) helper(n *types.Named, path, foreignAt string, omit omitTree) string {
	e := g.e
	key := types.TypeString(n, nil) // instances of a generic type differ
	specialised := len(omit) > 0
	if specialised {
		key += " for " + g.spec + " omitting " + fmt.Sprint(omit) // fmt sorts map keys
	}
	{
		if h, ok := e.codecHelpers[key]; ok {
			if h.building {
				h.recursive = true // the type reaches itself
			}
			if h.problems != nil {
				g.lift(h, path, foreignAt)
				return ""
			}
			for l := range h.lossy {
				g.lossy[l] = true
			}
			for f := range h.skipped {
				g.skipped[f] = true
			}
			g.errs = g.errs || h.errs
			g.addUnions(h.unions)
			return h.name
		}
	}
	base := n.Obj().Name() + e.instanceSuffix(n)
	if n.Obj().Pkg() != e.pi.pkg.Types {
		base = upperFirst(n.Obj().Pkg().Name()) + base
	}
	if specialised {
		base += "For" + g.spec
	}
	name := e.global("idemEnc" + base)[len("idemEnc"):]
	e.globals["idemDec"+name] = true
	h := &codecHelper{name: name, building: true}
	e.codecHelpers[key] = h // recursion finds it
	sub := &codecGen{e: e, lossy: map[string]bool{}, skipped: map[string]bool{}, spec: g.spec}
	// Paths inside the helper are relative; foreignAt "" at the root of an
	// own type, or the root itself of another package's.
	root := ""
	if n.Obj().Pkg() != e.pi.pkg.Types {
		root = "\x00" // inside another package's type: advise omitting its root
	}
	se, sd := fnScope{}, fnScope{}
	for _, l := range []string{"e", "d", "v"} {
		se[l], sd[l] = 1, 1
	}
	self := deref(jen.Id("v"))
	encBody := sub.inline(n, self, "", root, omit, se, true)
	decBody := sub.inline(n, self, "", root, omit, sd, false)
	h.building = false
	if h.recursive {
		// A value of a recursive type can nest without end (a cycle) or,
		// in a corrupt record, deeper than the stack holds: bound it.
		guard := func(x string) []jen.Code {
			return []jen.Code{
				jen.If(jen.Op("!").Id(x).Dot("Enter").Call()).Block(jen.Return()),
				jen.Defer().Id(x).Dot("Leave").Call(),
			}
		}
		encBody = append(guard("e"), encBody...)
		decBody = append(guard("d"), decBody...)
	}
	if len(sub.problems) > 0 {
		h.problems = sub.problems
		g.lift(h, path, foreignAt)
		return ""
	}
	h.lossy, h.skipped, h.errs, h.unions = sub.lossy, sub.skipped, sub.errs, sub.unions
	g.errs = g.errs || sub.errs
	g.addUnions(sub.unions)
	for l := range sub.lossy {
		g.lossy[l] = true
	}
	for f := range sub.skipped {
		g.skipped[f] = true
	}
	if _, ok := n.Underlying().(*types.Struct); ok {
		e.readFields(n)
	}
	tt := e.typ(n)
	encT, decT := e.qual(e.impl, "Encoder"), e.qual(e.impl, "Decoder")
	e.helperDecls = append(e.helperDecls,
		helperDecl{name: "idemEnc" + name, code: jen.Commentf("idemEnc%s stores values of %s.", name, e.pi.typeString(n)).Line().
			Func().Id("idemEnc"+name).Params(jen.Id("e").Op("*").Add(encT), jen.Id("v").Op("*").Add(tt)).Block(encBody...)},
		helperDecl{name: "idemDec" + name, code: jen.Commentf("idemDec%s restores values of %s.", name, e.pi.typeString(n)).Line().
			Func().Id("idemDec"+name).Params(jen.Id("d").Op("*").Add(decT), jen.Id("v").Op("*").Add(tt)).Block(decBody...)},
	)
	return name
}

// lift records the problems of helper h, reached at path, as problems of
// g. Their root is the outermost other package's value (foreignAt), else
// the root they had inside the helper, else this value when its type is
// recursive: advice must name a value the recursion cannot reach past.
func (g *codecGen) lift(h *codecHelper, path, foreignAt string) {
	for _, p := range h.problems {
		q := codecProblem{path: relJoin(path, p.path), msg: p.msg, cycle: p.cycle || h.recursive}
		switch {
		case foreignAt != "":
			q.root = foreignAt
		case strings.HasPrefix(p.root, "\x00"):
			q.root = relJoin(path, p.root[1:])
		case p.root != "":
			q.root = relJoin(path, p.root)
		case h.recursive:
			q.root = path
		}
		g.add(q)
	}
}

type codecHelper struct {
	name string
	// building: the helper's body is being generated; a use of the
	// helper meanwhile makes it recursive (its bodies guard the depth).
	building, recursive bool
	problems            []codecProblem // relative paths
	lossy, skipped      map[string]bool
	errs                bool
	unions              map[string]bool
}

func (g *codecGen) inline(t types.Type, v vx, path, foreignAt string, omit omitTree, s fnScope, encode bool) []jen.Code {
	e, pi := g.e, g.e.pi
	adv := func() string { return foreignAt }
	// conv converts v to the basic type the Encoder takes, unless it is one.
	conv := func(to string) jen.Code {
		if b, ok := t.(*types.Basic); ok && b.Name() == to {
			return v.val()
		}
		return jen.Id(to).Call(v.val())
	}
	// set assigns what the Decoder returned (of basic type from), converted.
	set := func(from string, x jen.Code) []jen.Code {
		if b, ok := t.(*types.Basic); ok && b.Name() == from {
			return one(v.val().Op("=").Add(x))
		}
		return one(v.val().Op("=").Add(e.typ(t)).Call(x))
	}
	call := func(m string, args ...jen.Code) []jen.Code { return one(jen.Id("e").Dot(m).Call(args...)) }
	read := func(m string, args ...jen.Code) *jen.Statement { return jen.Id("d").Dot(m).Call(args...) }
	switch u := t.Underlying().(type) {
	case *types.Basic:
		info := u.Info()
		bits := 64
		switch u.Kind() {
		case types.Int8, types.Uint8:
			bits = 8
		case types.Int16, types.Uint16:
			bits = 16
		case types.Int32, types.Uint32:
			bits = 32
		}
		switch {
		case u.Kind() == types.Bool:
			if encode {
				return call("Bool", conv("bool"))
			}
			return set("bool", read("Bool"))
		case info&types.IsString != 0:
			if encode {
				return call("String", conv("string"))
			}
			return set("string", read("String"))
		case info&types.IsUnsigned != 0:
			if encode {
				return call("Uint", conv("uint64"))
			}
			return set("uint64", read("Uint", jen.Lit(bits)))
		case info&types.IsInteger != 0:
			if encode {
				return call("Int", conv("int64"))
			}
			return set("int64", read("Int", jen.Lit(bits)))
		case u.Kind() == types.Float32:
			if encode {
				return call("Float32", conv("float32"))
			}
			return set("float32", read("Float32"))
		case info&types.IsFloat != 0:
			if encode {
				return call("Float64", conv("float64"))
			}
			return set("float64", read("Float64"))
		case info&types.IsComplex != 0:
			if encode {
				return call("Complex", conv("complex128"))
			}
			return set("complex128", read("Complex"))
		}
		g.fail(path, u.String()+" cannot be stored", adv())
		return nil
	case *types.Pointer:
		elem := u.Elem()
		if encode {
			inner := g.enc(elem, v.elem(), path, foreignAt, omit, s)
			return one(jen.If(v.val().Op("==").Nil()).Block(jen.Id("e").Dot("Nil").Call()).Else().Block(
				append([]jen.Code{jen.Id("e").Dot("Ptr").Call()}, inner...)...))
		}
		inner := g.dec(elem, v.elem(), path, foreignAt, omit, s)
		return one(jen.If(read("Ptr")).Block(
			append([]jen.Code{v.val().Op("=").New(e.typ(elem))}, inner...)...).Else().Block(v.val().Op("=").Nil()))
	case *types.Slice:
		if isNamed(t, "net", "IP") {
			// Builds before stored a net.IP by its MarshalText, as bytes
			// too: a non-nil one goes behind a pointer marker, so such a
			// record is ErrResultIncompatible, never text read as an
			// address.
			if encode {
				return one(jen.If(v.val().Op("==").Nil()).Block(jen.Id("e").Dot("Nil").Call()).Else().Block(
					jen.Id("e").Dot("Ptr").Call(), jen.Id("e").Dot("Bytes").Call(v.val())))
			}
			return one(jen.If(read("Ptr")).Block(v.val().Op("=").Add(read("Bytes"))).Else().Block(v.val().Op("=").Nil()))
		}
		if b, ok := u.Elem().(*types.Basic); ok && b.Kind() == types.Byte {
			if encode {
				if types.Identical(t, byteSlice) {
					return call("Bytes", v.val())
				}
				return call("Bytes", jen.Index().Byte().Call(v.val()))
			}
			if types.Identical(t, byteSlice) {
				return one(v.val().Op("=").Add(read("Bytes")))
			}
			return one(v.val().Op("=").Add(e.typ(t)).Call(read("Bytes")))
		}
		i := s.get("i")
		if encode {
			at := s.get("at")
			inner := g.enc(u.Elem(), expr(v.sel(false).Index(jen.Id(i))), path+"[]", foreignAt, nil, s)
			return one(jen.If(v.val().Op("==").Nil()).Block(jen.Id("e").Dot("Nil").Call()).Else().Block(
				jen.Id(at).Op(":=").Id("e").Dot("List").Call(jen.Len(v.val())),
				rangeOver(i, v.val(), inner),
				jen.Id("e").Dot("End").Call(jen.Id(at))))
		}
		inner := g.dec(u.Elem(), expr(v.sel(false).Index(jen.Id(i))), path+"[]", foreignAt, nil, s)
		return one(jen.If(read("Nil")).Block(v.val().Op("=").Nil()).Else().Block(
			v.val().Op("=").Make(e.typ(t), read("List")),
			rangeOver(i, v.val(), inner)))
	case *types.Array:
		i := s.get("i")
		if encode {
			at := s.get("at")
			inner := g.enc(u.Elem(), expr(v.sel(false).Index(jen.Id(i))), path+"[]", foreignAt, nil, s)
			return []jen.Code{
				jen.Id(at).Op(":=").Id("e").Dot("List").Call(jen.Len(v.val())),
				rangeOver(i, v.val(), inner),
				jen.Id("e").Dot("End").Call(jen.Id(at)),
			}
		}
		inner := g.dec(u.Elem(), expr(v.sel(false).Index(jen.Id(i))), path+"[]", foreignAt, nil, s)
		return one(jen.If(read("Array", jen.Len(v.val()))).Block(rangeOver(i, v.val(), inner)))
	case *types.Map:
		kb, ok := u.Key().Underlying().(*types.Basic)
		if !ok || kb.Info()&types.IsOrdered == 0 {
			g.fail(path, "map key "+pi.typeString(u.Key())+" is not a string or a number (only those keys are stored, in sorted order)", adv())
			return nil
		}
		k, x := s.get("k"), s.get("x")
		if encode {
			at := s.get("at")
			kc := g.enc(u.Key(), expr(jen.Id(k)), path+"[]", foreignAt, nil, s)
			xc := g.enc(u.Elem(), expr(jen.Id(x)), path+"[]", foreignAt, nil, s)
			body := kc
			if uses(xc, x) { // an element of an empty struct writes nothing of it
				body = append([]jen.Code{jen.Id(x).Op(":=").Add(v.sel(false)).Index(jen.Id(k))}, kc...)
			}
			body = append(body, xc...)
			return one(jen.If(v.val().Op("==").Nil()).Block(jen.Id("e").Dot("Nil").Call()).Else().Block(
				jen.Id(at).Op(":=").Id("e").Dot("Map").Call(jen.Len(v.val())),
				jen.Commentf("sorted: the same value always has the same bytes"),
				jen.For(jen.List(jen.Id("_"), jen.Id(k)).Op(":=").Range().Add(e.qual(slicesPkg, "Sorted")).Call(e.qual(mapsPkg, "Keys").Call(v.val()))).Block(body...),
				jen.Id("e").Dot("End").Call(jen.Id(at))))
		}
		n := s.get("n")
		kc := g.dec(u.Key(), expr(jen.Id(k)), path+"[]", foreignAt, nil, s)
		xc := g.dec(u.Elem(), expr(jen.Id(x)), path+"[]", foreignAt, nil, s)
		body := []jen.Code{jen.Var().Id(k).Add(e.typ(u.Key())), jen.Var().Id(x).Add(e.typ(u.Elem()))}
		body = append(body, kc...)
		body = append(body, xc...)
		body = append(body, v.sel(false).Index(jen.Id(k)).Op("=").Id(x))
		return one(jen.If(read("Nil")).Block(v.val().Op("=").Nil()).Else().Block(
			jen.Id(n).Op(":=").Add(read("Map")),
			v.val().Op("=").Make(e.typ(t), jen.Id(n)),
			jen.For(jen.Range().Id(n)).Block(body...)))
	case *types.Struct:
		own := true
		if nt, ok := t.(*types.Named); ok && nt.Obj().Pkg() != pi.pkg.Types {
			own = false
		}
		at, end := s.get("at"), s.get("end")
		var encs, cases []jen.Code
		exported := 0
		for i := 0; i < u.NumFields(); i++ {
			f := u.Field(i)
			fp := joinPath(path, f.Name())
			sub, omitted := omit[f.Name()]
			if omitted && len(sub) == 0 {
				if f.Exported() {
					exported++ // left out by name, on the doc line: not lost silently
				}
				continue
			}
			if f.Exported() && g.opaque(f.Type()) && len(sub) == 0 {
				// Another package's state held by value, none of it
				// exported (an AWS output's ResultMetadata): replays hold
				// its zero value, which is usable, and the doc line names
				// the type. A result that is such a value is still refused.
				g.lossy[pi.typeString(f.Type())] = true
				continue
			}
			if !own && f.Exported() && jsonSkipped(u.Tag(i)) && !storable(f.Type()) {
				g.skipped[pi.typeString(t)+"."+f.Name()] = true
				continue
			}
			if !f.Exported() {
				if f.Name() == "_" || zeroSize(f.Type()) {
					continue
				}
				if !own {
					g.lossy[pi.typeString(t)] = true
					continue
				}
				if !(f.Embedded() && isStruct(f.Type())) {
					g.fail(fp, "unexported field (export it, or give the type a marshaling pair)", "")
					continue
				}
			}
			exported++
			fv := expr(v.sel(true).Dot(f.Name()))
			if encode {
				encs = append(encs, jen.Id("e").Dot("Field").Call(jen.Lit(f.Name())))
				encs = append(encs, g.enc(f.Type(), fv, fp, foreignAt, sub, s)...)
			} else {
				cases = append(cases, jen.Case(jen.Lit(f.Name())).Block(g.dec(f.Type(), fv, fp, foreignAt, sub, s)...))
			}
		}
		if !own && exported == 0 && g.lossy[pi.typeString(t)] {
			g.fail(path, pi.typeString(t)+" has no exported fields: all its state would be lost on replay", adv())
			return nil
		}
		if encode {
			out := []jen.Code{jen.Id(at).Op(":=").Id("e").Dot("Struct").Call()}
			out = append(out, encs...)
			return append(out, jen.Id("e").Dot("End").Call(jen.Id(at)))
		}
		cases = append(cases, jen.Default().Block(jen.Id("d").Dot("Skip").Call()))
		return []jen.Code{
			jen.Id(end).Op(":=").Add(read("Struct")),
			jen.For(jen.Id("d").Dot("More").Call(jen.Id(end))).Block(
				jen.Switch(jen.String().Call(read("Field"))).Block(cases...)),
		}
	case *types.Interface:
		if types.Identical(t, errorType) {
			// Its text and chain, and the known error types as
			// themselves (errtypes.go).
			g.errs = true
			if encode {
				return call("Error", v.val(), e.errorTypes())
			}
			return one(v.val().Op("=").Add(read("Error", e.errorTypes())))
		}
		if n, ok := t.(*types.Named); ok {
			if vs := e.variants(n); len(vs) > 0 {
				return g.union(n, vs, v, path, foreignAt, s, encode)
			}
		}
		if u.Empty() {
			// any: stored with its dynamic type where that is one the
			// runtime restores exactly (what encoding/json decodes into
			// an any, basic types); any other is ErrResultNotEncodable.
			if encode {
				return call("Any", v.val())
			}
			return one(v.val().Op("=").Add(read("Any")))
		}
		g.fail(path, "interface "+pi.typeString(t)+" cannot be decoded to its dynamic type", adv())
	case *types.Signature:
		g.fail(path, "func values cannot be stored", adv())
	case *types.Chan:
		g.fail(path, "channels cannot be stored", adv())
	default:
		g.fail(path, "type "+pi.typeString(t)+" cannot be stored", adv())
	}
	return nil
}

// lossyList is the sorted list of types that lose unexported state.
func (g *codecGen) lossyList() []string {
	var l []string
	for t := range g.lossy {
		l = append(l, t)
	}
	sort.Strings(l)
	return l
}

// rangeOver is a loop over the indexes i of v running body, or over
// v's length when body does not index (elements of empty structs).
func rangeOver(i string, v jen.Code, body []jen.Code) *jen.Statement {
	if !uses(body, i) {
		return jen.For(jen.Range().Add(v)).Block(body...)
	}
	return jen.For(jen.Id(i).Op(":=").Range().Add(v)).Block(body...)
}

// uses reports whether the generated code mentions the identifier id.
func uses(code []jen.Code, id string) bool {
	return slices.Contains(strings.FieldsFunc(fmt.Sprintf("%#v", jen.Block(code...)), func(r rune) bool {
		return r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}), id)
}

// opaque reports whether t is another package's struct held by value
// whose data is all unexported and that has no marshaling pair: no
// codec can store any of it.
func (g *codecGen) opaque(t types.Type) bool {
	n, ok := t.(*types.Named)
	if !ok || n.Obj().Pkg() == nil || n.Obj().Pkg() == g.e.pi.pkg.Types {
		return false
	}
	st, ok := n.Underlying().(*types.Struct)
	if !ok {
		return false
	}
	if _, _, ok := g.pair(t); ok || lossyPair(g.e.pi, t) != "" {
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

// relJoin puts a path relative to a helper's value after path.
func relJoin(path, rel string) string {
	switch {
	case rel == "":
		return path
	case path == "" || strings.HasPrefix(rel, "["):
		return path + rel
	}
	return path + "." + rel
}

// resultName is how diagnostics and omit= call result i: its declared
// name, else rN.
func resultName(x *fn, i int) string {
	if n := x.sig.Results().At(i).Name(); n != "" && n != "_" {
		return n
	}
	return "r" + strconv.Itoa(i+1)
}

// resultCodec emits the codec of x's result value and sets the Spec's
// Codec field (the Spec is out's first declaration). It returns what the
// wrapper's doc comment says about the record; false after a diagnostic.
func (e *emitter) resultCodec(x *fn, specBase, name string, resultT jen.Code, out *[]jen.Code) (string, bool) {
	pi := e.pi
	namePos := pi.fset.Position(x.pos)
	what := x.what()
	if !e.typeParamResults(x, what) {
		return "", false // generics.go
	}
	// omit=: by result, then a tree of field names.
	omits := make([]omitTree, len(x.result))
	type omitPath struct {
		idx  int
		hops []string // the fields, promoted ones through their embeddings
	}
	var paths []omitPath
	ok := true
	for _, p := range x.opts.omit {
		segs := strings.Split(p.text, ".")
		idx := -1
		var names []string
		for i := range x.result {
			n := resultName(x, i)
			names = append(names, n)
			if segs[0] == n || segs[0] == "r"+strconv.Itoa(i+1) {
				idx = i
			}
		}
		if idx < 0 && len(names) == 0 {
			pi.d.add(p.pos, "omit: %s has no result to omit (it returns only an error)", x.name)
			ok = false
			continue
		}
		if idx < 0 {
			pi.d.add(p.pos, "omit: %s names no result of %s (its results: %s)", p.text, x.name, strings.Join(names, ", "))
			ok = false
			continue
		}
		t := x.result[idx]
		// Promoted fields go through the embedded fields that hold them,
		// which the codec stores by name: the tree names them all.
		var hops []string
		for _, f := range segs[1:] {
			path, amb := fieldPath(t, f)
			if len(amb) > 0 {
				here := strings.Join(append([]string{segs[0]}, hops...), ".")
				pi.d.add(p.pos, "omit: %s.%s is ambiguous: %s is promoted from %s at the same depth (name one: %s)", here, f, f, strings.Join(amb, " and "), fullPaths(here, amb, f))
				ok = false
				break
			}
			if path == nil {
				path = []string{f}
			}
			var found *types.Var
			for _, h := range path {
				if pt, isPtr := t.Underlying().(*types.Pointer); isPtr {
					t = pt.Elem()
				}
				st, isStruct := t.Underlying().(*types.Struct)
				found = nil
				for i := 0; isStruct && i < st.NumFields(); i++ {
					if st.Field(i).Name() == h {
						found = st.Field(i)
					}
				}
				if found == nil {
					pi.d.add(p.pos, "omit: %s: %s has no field %s", p.text, pi.typeString(t), h)
					break
				}
				t = found.Type()
			}
			if found == nil {
				ok = false
				break
			}
			hops = append(hops, path...)
		}
		if !ok {
			continue
		}
		paths = append(paths, omitPath{idx, hops})
	}
	if !ok {
		return "", false
	}
	// A path under another omitted path is omitted already (r2.Body under
	// r2): it is dropped, or its subtree would stand for the whole.
	canon := func(j int) string {
		return strings.Join(append([]string{"r" + strconv.Itoa(paths[j].idx+1)}, paths[j].hops...), ".")
	}
	for i, p := range paths {
		if coveredByOther(i, len(paths), canon) {
			continue
		}
		if len(p.hops) == 0 {
			omits[p.idx] = omitTree{"": nil} // the whole result
			continue
		}
		if omits[p.idx] == nil {
			omits[p.idx] = omitTree{}
		}
		tree := omits[p.idx]
		for _, f := range p.hops {
			if tree[f] == nil {
				tree[f] = omitTree{}
			}
			tree = tree[f]
		}
	}
	if len(x.result) == 0 {
		return "", true
	}
	g := &codecGen{e: e, lossy: map[string]bool{}, skipped: map[string]bool{}, spec: specBase}
	whole := func(i int) bool { _, w := omits[i][""]; return w }
	se, sd := fnScope{"e": 1, "d": 1, "v": 1}, fnScope{"e": 1, "d": 1, "v": 1}
	var encBody, decBody []jen.Code
	if len(x.result) == 1 {
		if !whole(0) {
			v := deref(jen.Id("v"))
			encBody = g.enc(x.result[0], v, resultName(x, 0), "", omits[0], se)
			decBody = g.dec(x.result[0], v, resultName(x, 0), "", omits[0], sd)
		}
	} else {
		at, end := se.get("at"), sd.get("end")
		encBody = append(encBody, jen.Id(at).Op(":=").Id("e").Dot("Struct").Call())
		var cases []jen.Code
		for i, t := range x.result {
			if whole(i) {
				continue
			}
			f := "R" + strconv.Itoa(i+1) // stored by position, whatever the field's name
			fv := expr(jen.Id("v").Dot(x.resultFields[i]))
			encBody = append(encBody, jen.Id("e").Dot("Field").Call(jen.Lit(f)))
			encBody = append(encBody, g.enc(t, fv, resultName(x, i), "", omits[i], se)...)
			cases = append(cases, jen.Case(jen.Lit(f)).Block(g.dec(t, fv, resultName(x, i), "", omits[i], sd)...))
		}
		encBody = append(encBody, jen.Id("e").Dot("End").Call(jen.Id(at)))
		cases = append(cases, jen.Default().Block(jen.Id("d").Dot("Skip").Call()))
		decBody = []jen.Code{
			jen.Id(end).Op(":=").Id("d").Dot("Struct").Call(),
			jen.For(jen.Id("d").Dot("More").Call(jen.Id(end))).Block(jen.Switch(jen.String().Call(jen.Id("d").Dot("Field").Call())).Block(cases...)),
		}
	}
	if len(g.problems) > 0 {
		// One line per omit= that would lift them.
		type line struct {
			idx  int
			msgs []string
		}
		byOmit := map[string]*line{}
		var order []string
		inRoot := map[string]int{}
		for _, p := range g.problems {
			inRoot[p.root]++
		}
		for _, p := range g.problems {
			// Several problems inside one other package's value (an
			// *http.Response): omit that value. Else the problem's own path.
			omit := advicePath(p.path)
			if p.root != "" && (inRoot[p.root] > 1 || p.cycle) {
				omit = advicePath(p.root)
			}
			root := strings.SplitN(strings.SplitN(p.path, ".", 2)[0], "[", 2)[0]
			idx := 0
			for i := range x.result {
				if resultName(x, i) == root {
					idx = i
				}
			}
			l := byOmit[omit]
			if l == nil {
				l = &line{idx: idx}
				byOmit[omit] = l
				order = append(order, omit)
			}
			l.msgs = append(l.msgs, p.path+": "+p.msg)
		}
		for _, o := range order {
			l := byOmit[o]
			msg := l.msgs[0]
			if len(l.msgs) > 1 {
				msg += " (and " + strconv.Itoa(len(l.msgs)-1) + " more)"
			}
			pi.d.add(namePos, "%s: result %d (%s) cannot be stored faithfully: %s (add `omit=%s`)", what, l.idx+1, pi.typeString(x.result[l.idx]), msg, o)
		}
		return "", false
	}
	encT, decT := e.qual(e.impl, "Encoder"), e.qual(e.impl, "Decoder")
	*out = append(*out, jen.Commentf("%s stores the results of %s (generated codec).", name, x.name).Line().
		Var().Id(name).Op("=").Add(e.qual(e.impl, "TypedCodec")).Index(resultT).Values(jen.Dict{
		jen.Id("Encode"): jen.Func().Params(jen.Id("e").Op("*").Add(encT), jen.Id("v").Op("*").Add(resultT)).Block(encBody...),
		jen.Id("Decode"): jen.Func().Params(jen.Id("d").Op("*").Add(decT), jen.Id("v").Op("*").Add(resultT)).Block(decBody...),
	}))
	var doc string
	var omitted []string
	for i, p := range x.opts.omit {
		if !coveredByOther(i, len(paths), canon) {
			omitted = append(omitted, p.text)
		}
	}
	if len(omitted) > 0 {
		doc += " Not stored (replays return their zero value): " + strings.Join(omitted, ", ") + "."
	}
	if l := g.lossyList(); len(l) > 0 {
		doc += " Replays do not restore the unexported state of " + strings.Join(l, ", ") + "."
	}
	if len(g.skipped) > 0 {
		doc += " Not stored (tagged json:\"-\" by their package): " + strings.Join(slices.Sorted(maps.Keys(g.skipped)), ", ") + "."
	}
	if len(g.unions) > 0 {
		doc += " Values of " + strings.Join(slices.Sorted(maps.Keys(g.unions)), ", ") + " are stored for the types of their package that their codec lists; others fail the recording."
	}
	if g.errs {
		doc += " Errors in results replay as their text and chain, as themselves if " + e.errs.name + " lists them."
	}
	return doc, true
}
