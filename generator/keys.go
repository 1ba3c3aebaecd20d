package generator

import (
	"go/types"
	"reflect"
	"strings"

	"github.com/dave/jennifer/jen"
)

// val is a Go expression of the value being keyed. ptr says the expression
// is a non-nil pointer to the value (helpers take *T, so large structs are
// not copied); every value the generated code keys is addressable.
type val struct {
	e   func() *jen.Statement
	ptr bool
	// bare is e without the parentheses that field and method access
	// need ((*p).F), for uses that do not (passing p on, *p).
	bare func() *jen.Statement
}

func (v val) unparen() *jen.Statement {
	if v.bare != nil {
		return v.bare()
	}
	return v.e()
}

func (v val) value() *jen.Statement {
	if v.ptr {
		return jen.Op("*").Add(v.unparen())
	}
	return v.e()
}

// index is v[i] for a slice value.
func (v val) index(i string) *jen.Statement {
	if v.ptr {
		return jen.Parens(v.value()).Index(jen.Id(i))
	}
	return v.e().Index(jen.Id(i))
}

func (v val) addr() *jen.Statement {
	if v.ptr {
		return v.unparen()
	}
	return jen.Op("&").Add(v.e())
}

// field selects a field; Go dereferences the pointer itself.
func (v val) field(name string) val {
	return val{e: func() *jen.Statement { return v.e().Dot(name) }}
}

func id(name string) func() *jen.Statement {
	return func() *jen.Statement { return jen.Id(name) }
}

// namer hands out local names that do not collide with the names in use.
type namer map[string]bool

func (n namer) get(base string) string {
	name := base
	for i := 2; n[name]; i++ {
		name = base + itoa(i)
	}
	n[name] = true
	return name
}

// exTree is the set of excluded field paths below one value: the fields
// listed are skipped (leaf) or expanded (inner node).
type exTree map[string]exTree

// keyer is what write needs to know about the current key path.
type writer struct {
	e *emitter
	b func() *jen.Statement // the *idem.KeyBuilder
	n namer
	// raw is the named type whose helper is being written: write it by its
	// underlying type (its own checks were done by the caller).
	raw types.Type
	// inlining holds the named types being written inline (no helper).
	inlining map[*types.Named]bool
}

// write returns the statements writing v (of type t, at path) into the
// builder, or a message saying why t cannot be keyed. ex, when non-nil,
// lists fields to skip: the value is then expanded inline.
func (w *writer) write(v val, t types.Type, path string, ex exTree, variadic bool) ([]jen.Code, string) {
	t = types.Unalias(t)
	wk := w.e.pi.types
	b := w.b
	raw := w.raw != nil && t == w.raw
	w.raw = nil
	if ex == nil && !raw {
		if _, isPtr := t.Underlying().(*types.Pointer); !isPtr {
			if isNamed(t, "time", "Time") {
				return one(b().Dot("Time").Call(v.value())), ""
			}
			if ok, ptr := implements(t, wk.keyer); ok {
				if ptr {
					return one(b().Dot("Key").Call(v.addr())), ""
				}
				return w.nilIface(t, v, b().Dot("Key").Call(v.value())), ""
			}
			if ok, _ := implements(t, wk.binaryMarshaler); ok {
				return w.nilIface(t, v, b().Dot("Marshaled").Call(v.e().Dot("MarshalBinary").Call())), ""
			}
			if ok, _ := implements(t, wk.textMarshaler); ok {
				return w.nilIface(t, v, b().Dot("Marshaled").Call(v.e().Dot("MarshalText").Call())), ""
			}
		}
		if n, ok := t.(*types.Named); ok {
			if _, basic := n.Underlying().(*types.Basic); !basic {
				if n.TypeArgs().Len() > 0 {
					return nil, path + ": generic type " + w.e.pi.typeString(t) + " cannot be keyed (implement idem.Keyer)"
				}
				if _, isIface := n.Underlying().(*types.Interface); !isIface {
					if w.e.nameable(n.Obj()) {
						name, msg := w.e.helper(n, path)
						if msg != "" {
							return nil, msg
						}
						return one(jen.Id(name).Call(b(), v.addr())), ""
					}
					// A type the generated file cannot name (unexported, or
					// in an internal package it cannot import) is written
					// inline, which cannot recurse.
					if w.inlining[n] {
						return nil, path + ": recursive type " + w.e.pi.typeString(t) + " cannot be named here (implement idem.Keyer)"
					}
					if w.inlining == nil {
						w.inlining = map[*types.Named]bool{}
					}
					w.inlining[n] = true
					defer delete(w.inlining, n)
				}
			}
		}
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		return w.basic(v, t, u, path)
	case *types.Pointer:
		elem := val{e: v.e, ptr: true}
		if v.ptr {
			elem = val{e: func() *jen.Statement { return jen.Parens(v.value()) }, ptr: true, bare: v.value}
		}
		inner, msg := w.write(elem, u.Elem(), path, ex, false)
		if msg != "" {
			return nil, msg
		}
		return one(jen.If(v.value().Op("==").Nil()).Block(b().Dot("Nil").Call()).Else().Block(append(one(b().Dot("Ptr").Call()), inner...)...)), ""
	case *types.Slice:
		if types.Identical(u.Elem(), types.Typ[types.Byte]) {
			if variadic {
				return one(b().Dot("Bytes").Call(v.value())), ""
			}
			return w.nilCheck(v, one(b().Dot("Bytes").Call(v.value()))), ""
		}
		i := w.n.get("i")
		elem := val{e: func() *jen.Statement { return v.index(i) }}
		inner, msg := w.write(elem, u.Elem(), path+"[i]", nil, false)
		if msg != "" {
			return nil, msg
		}
		delete(w.n, i) // a sibling loop may use the name again
		body := []jen.Code{
			b().Dot("List").Call(jen.Len(v.value())),
			jen.For(jen.Id(i).Op(":=").Range().Add(v.value())).Block(inner...),
		}
		if variadic {
			return body, "" // nil and empty variadic arguments are the same call
		}
		return w.nilCheck(v, body), ""
	case *types.Array:
		if types.Identical(u.Elem(), types.Typ[types.Byte]) {
			return one(b().Dot("Bytes").Call(v.e().Index(jen.Op(":")))), ""
		}
		i := w.n.get("i")
		elem := val{e: func() *jen.Statement { return v.e().Index(jen.Id(i)) }}
		inner, msg := w.write(elem, u.Elem(), path+"[i]", nil, false)
		if msg != "" {
			return nil, msg
		}
		delete(w.n, i)
		return []jen.Code{
			b().Dot("List").Call(jen.Lit(int(u.Len()))),
			jen.For(jen.Id(i).Op(":=").Range().Add(v.e())).Block(inner...),
		}, ""
	case *types.Map:
		k, x := w.n.get("k"), w.n.get("e")
		ks, msg := w.write(val{e: id(k)}, u.Key(), path+"[key]", nil, false)
		if msg != "" {
			return nil, msg
		}
		xs, msg := w.write(val{e: id(x)}, u.Elem(), path+"[value]", nil, false)
		if msg != "" {
			return nil, msg
		}
		delete(w.n, k)
		delete(w.n, x)
		loop := append(append(one(b().Dot("MapEntry").Call()), ks...), xs...)
		return w.nilCheck(v, []jen.Code{
			b().Dot("MapStart").Call(jen.Len(v.value())),
			jen.For(jen.List(jen.Id(k), jen.Id(x)).Op(":=").Range().Add(v.value())).Block(loop...),
			b().Dot("MapEnd").Call(),
		}), ""
	case *types.Struct:
		var out []jen.Code
		for i := 0; i < u.NumFields(); i++ {
			f := u.Field(i)
			if f.Name() == "_" || reflect.StructTag(u.Tag(i)).Get("idem") == "-" {
				continue
			}
			sub, inEx := ex[f.Name()]
			if inEx && len(sub) == 0 {
				continue // excluded
			}
			fp := joinPath(path, f.Name())
			if !f.Exported() && f.Pkg() != w.e.pi.pkg.Types {
				return nil, fp + ": unexported field of " + w.e.pi.typeString(t) + " (implement idem.Keyer, encoding.BinaryMarshaler or encoding.TextMarshaler on it, or key on other fields)"
			}
			s, msg := w.write(v.field(f.Name()), f.Type(), fp, sub, false)
			if msg != "" {
				return nil, msg
			}
			out = append(out, s...)
		}
		return out, ""
	case *types.Interface:
		return nil, path + ": interface " + w.e.pi.typeString(t) + " cannot be keyed (key on concrete fields, exclude it, or make it embed idem.Keyer)"
	case *types.Signature:
		return nil, path + ": func values cannot be keyed (exclude it or tag the field idem:\"-\")"
	case *types.Chan:
		return nil, path + ": channels cannot be keyed (exclude it or tag the field idem:\"-\")"
	}
	return nil, path + ": type " + w.e.pi.typeString(t) + " cannot be keyed"
}

func one(c jen.Code) []jen.Code { return []jen.Code{c} }

// nilCheck writes Nil for a nil pointer, slice or map, else body.
func (w *writer) nilCheck(v val, body []jen.Code) []jen.Code {
	return one(jen.If(v.value().Op("==").Nil()).Block(w.b().Dot("Nil").Call()).Else().Block(body...))
}

// nilIface guards a method call on an interface value against nil.
func (w *writer) nilIface(t types.Type, v val, call jen.Code) []jen.Code {
	if types.IsInterface(t) {
		return w.nilCheck(v, one(call))
	}
	return one(call)
}

func (w *writer) basic(v val, t types.Type, u *types.Basic, path string) ([]jen.Code, string) {
	var method string
	var target types.Type
	info := u.Info()
	switch {
	case info&types.IsBoolean != 0:
		method, target = "Bool", types.Typ[types.Bool]
	case info&types.IsInteger != 0 && info&types.IsUnsigned != 0:
		method, target = "Uint", types.Typ[types.Uint64]
	case info&types.IsInteger != 0:
		method, target = "Int", types.Typ[types.Int64]
	case info&types.IsFloat != 0:
		method, target = "Float", types.Typ[types.Float64]
	case info&types.IsComplex != 0:
		method, target = "Complex", types.Typ[types.Complex128]
	case info&types.IsString != 0:
		method, target = "String", types.Typ[types.String]
	default:
		return nil, path + ": " + w.e.pi.typeString(t) + " cannot be keyed"
	}
	x := v.value()
	if !types.Identical(t, target) {
		x = jen.Id(target.(*types.Basic).Name()).Call(x)
	}
	return one(w.b().Dot(method).Call(x)), ""
}

// helper returns the name of the key function of named type n, emitting it
// on first use. Recursive types work: the name is reserved before the body
// is written.
func (e *emitter) helper(n *types.Named, path string) (string, string) {
	obj := n.Obj()
	if name, ok := e.helpers[obj]; ok {
		return name, ""
	}
	prefix := ""
	if obj.Pkg() != e.pi.pkg.Types {
		prefix = upperFirst(obj.Pkg().Name())
	}
	name := e.global("idemKey" + prefix + upperFirst(obj.Name()))
	e.helpers[obj] = name
	w := &writer{e: e, b: id("b"), n: namer{"b": true, "v": true}, raw: n}
	body, msg := w.write(val{e: id("v"), ptr: true}, n, path, nil, false)
	if msg != "" {
		delete(e.helpers, obj)
		delete(e.globals, name)
		return "", msg
	}
	decl := jen.Commentf("%s writes the key material of %s.", name, e.pi.typeString(n)).Line().
		Func().Id(name).Params(jen.Id("b").Op("*").Add(e.qual(e.idemPkg(), "KeyBuilder")), jen.Id("v").Op("*").Add(e.typ(n))).Block(body...)
	e.helperDecls = append(e.helperDecls, helperDecl{name: name, code: decl})
	return name, ""
}

// nameable reports whether the generated file can refer to the type by
// name: declared in the package itself, or exported from a package it may
// import (not another module's internal package).
func (e *emitter) nameable(obj *types.TypeName) bool {
	pkg := obj.Pkg()
	if pkg == nil || pkg == e.pi.pkg.Types {
		return true
	}
	if !obj.Exported() {
		return false
	}
	path := pkg.Path()
	var parent string
	switch {
	case strings.HasPrefix(path, "internal/") || path == "internal":
		parent = ""
	case strings.Contains(path, "/internal/"):
		parent = path[:strings.LastIndex(path, "/internal/")]
	case strings.HasSuffix(path, "/internal"):
		parent = strings.TrimSuffix(path, "/internal")
	default:
		return true
	}
	from := e.pi.pkg.PkgPath
	return parent != "" && (from == parent || strings.HasPrefix(from, parent+"/"))
}
