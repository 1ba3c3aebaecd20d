package generator

import (
	"go/types"
	"reflect"
	"strconv"

	"github.com/dave/jennifer/jen"
)

// qual refers to a package-level name of pkg, importing pkg under an alias
// that collides with nothing the generated file or the package declares.
func (e *emitter) qual(pkg *types.Package, name string) *jen.Statement {
	if pkg == nil || pkg == e.pi.pkg.Types {
		return jen.Id(name)
	}
	e.importAs(pkg.Path(), pkg.Name())
	return jen.Qual(pkg.Path(), name)
}

// importAs picks the alias of path once: its package name unless that is
// taken by a package-level name, a parameter of any wrapper, a local name
// of the generated code or another import; then name2, name3...
func (e *emitter) importAs(path, name string) string {
	if a, ok := e.aliases[path]; ok {
		return a
	}
	alias := name
	for i := 2; e.aliasTaken(alias); i++ {
		alias = name + strconv.Itoa(i)
	}
	e.aliases[path] = alias
	e.aliasUsed[alias] = true
	if alias == name {
		e.f.ImportName(path, name)
	} else {
		e.f.ImportAlias(path, alias)
	}
	return alias
}

func (e *emitter) aliasTaken(a string) bool {
	return e.aliasUsed[a] || e.pi.scope[a] || e.paramNames[a] || e.globals[a] || localNames[a] ||
		types.Universe.Lookup(a) != nil || isLoopName(a)
}

// localNames are the fixed local identifiers of generated code.
var localNames = map[string]bool{"b": true, "v": true, "c": true, "x": true, "g": true, "t": true, "r": true, "err": true, "ctx": true}

// isLoopName matches the loop variables generated code declares (i, k, e, i2…).
func isLoopName(s string) bool {
	if s == "" || (s[0] != 'i' && s[0] != 'k' && s[0] != 'e') {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

var unsafePkg = types.NewPackage("unsafe", "unsafe")

// typ renders t as Go source in the generated file.
func (e *emitter) typ(t types.Type) jen.Code {
	switch t := t.(type) {
	case *types.Alias:
		if obj := t.Obj(); obj.Pkg() == nil {
			return jen.Id(obj.Name()) // any, byte, rune…
		} else if (obj.Exported() && e.pi.nameable(obj)) || obj.Pkg() == e.pi.pkg.Types {
			return e.withArgs(e.qual(obj.Pkg(), obj.Name()), t.TypeArgs())
		}
		return e.typ(types.Unalias(t))
	case *types.Basic:
		if t.Kind() == types.UnsafePointer {
			return e.qual(unsafePkg, "Pointer")
		}
		return jen.Id(t.Name())
	case *types.Named:
		return e.namedType(t)
	}
	switch s := shapeOf(t); s.kind {
	case kindPointer:
		return jen.Op("*").Add(e.typ(s.elem))
	case kindSlice:
		return jen.Index().Add(e.typ(s.elem))
	case kindArray:
		return jen.Index(jen.Lit(int(s.len))).Add(e.typ(s.elem))
	case kindMap:
		return jen.Map(e.typ(s.key)).Add(e.typ(s.elem))
	case kindChan:
		switch s.dir {
		case types.SendOnly:
			return jen.Chan().Op("<-").Add(e.typ(s.elem))
		case types.RecvOnly:
			return jen.Op("<-").Chan().Add(e.typ(s.elem))
		}
		return jen.Chan().Add(e.typ(s.elem))
	case kindFunc:
		return jen.Func().Add(e.signature(s.signature, nil))
	case kindStruct:
		return e.structType(s.strct)
	case kindInterface:
		return e.interfaceType(s.iface)
	}
	return jen.Id(types.TypeString(t, nil))
}

// namedType renders a named type, with its type arguments.
func (e *emitter) namedType(t *types.Named) jen.Code {
	obj := t.Obj()
	if obj.Pkg() == nil {
		return jen.Id(obj.Name()) // error
	}
	if !e.pi.nameable(obj) {
		// Only an alias can name it here (an SDK's exported
		// UploadResponse = uploadResponse): spell that.
		if a, args := e.pi.aliasFor(t); a != nil {
			return e.withArgs(e.qual(a.Pkg(), a.Name()), args)
		}
	}
	return e.withArgs(e.qual(obj.Pkg(), obj.Name()), t.TypeArgs())
}

// withArgs instantiates q with args, if any.
func (e *emitter) withArgs(q *jen.Statement, args *types.TypeList) *jen.Statement {
	if args.Len() > 0 {
		list := make([]jen.Code, args.Len())
		for i := range list {
			list[i] = e.typ(args.At(i))
		}
		q.Index(jen.List(list...))
	}
	return q
}

// structType renders a struct type literal, tags included.
func (e *emitter) structType(t *types.Struct) jen.Code {
	fields := make([]jen.Code, t.NumFields())
	for i := range fields {
		f := t.Field(i)
		var s *jen.Statement
		if f.Embedded() {
			s = jen.Add(e.typ(f.Type()))
		} else {
			s = jen.Id(f.Name()).Add(e.typ(f.Type()))
		}
		if tag := t.Tag(i); tag != "" {
			s.Tag(parseTag(tag))
		}
		fields[i] = s
	}
	return jen.Struct(fields...)
}

// interfaceType renders an interface type literal by its methods.
func (e *emitter) interfaceType(t *types.Interface) jen.Code {
	if t.NumMethods() == 0 && t.NumEmbeddeds() == 0 {
		return jen.Id("any")
	}
	ms := make([]jen.Code, t.NumMethods())
	for i := range ms {
		m := t.Method(i)
		ms[i] = jen.Id(m.Name()).Add(e.signature(m.Type().(*types.Signature), nil))
	}
	return jen.Interface(ms...)
}

// signature renders (params) (results); names are the parameter names or nil.
func (e *emitter) signature(s *types.Signature, names []string) jen.Code {
	ps := make([]jen.Code, s.Params().Len())
	for i := range ps {
		t := s.Params().At(i).Type()
		var tc jen.Code
		if s.Variadic() && i == len(ps)-1 {
			tc = jen.Op("...").Add(e.typ(t.(*types.Slice).Elem()))
		} else {
			tc = e.typ(t)
		}
		if names != nil {
			ps[i] = jen.Id(names[i]).Add(tc)
		} else {
			ps[i] = tc
		}
	}
	rs := make([]jen.Code, s.Results().Len())
	for i := range rs {
		rs[i] = e.typ(s.Results().At(i).Type())
	}
	st := jen.Params(ps...)
	switch len(rs) {
	case 0:
	case 1:
		st.Add(rs[0])
	default:
		st.Params(rs...)
	}
	return st
}

// parseTag turns a struct tag back into jennifer's map form.
func parseTag(tag string) map[string]string {
	m := map[string]string{}
	st := reflect.StructTag(tag)
	for _, k := range tagKeys(tag) {
		m[k], _ = st.Lookup(k)
	}
	return m
}

func tagKeys(tag string) []string {
	var keys []string
	for tag != "" {
		i := 0
		for i < len(tag) && tag[i] == ' ' {
			i++
		}
		tag = tag[i:]
		i = 0
		for i < len(tag) && tag[i] > ' ' && tag[i] != ':' && tag[i] != '"' {
			i++
		}
		if i == 0 || i+1 >= len(tag) || tag[i] != ':' || tag[i+1] != '"' {
			break
		}
		keys = append(keys, tag[:i])
		tag = tag[i+1:]
		i = 1
		for i < len(tag) && tag[i] != '"' {
			if tag[i] == '\\' {
				i++
			}
			i++
		}
		if i >= len(tag) {
			break
		}
		tag = tag[i+1:]
	}
	return keys
}
