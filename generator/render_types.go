package generator

import (
	"go/types"
	"reflect"
	"strconv"
	"time"

	"github.com/dave/jennifer/jen"
)

// fileWriter is the generated file as it is written: the jennifer file and
// the names it has handed out. Every import goes through it (qual), so the
// file's aliases collide with nothing the package declares.
type fileWriter struct {
	pi *pkgInfo
	f  *jen.File
	fileNames
	fileChecks
}

// fileChecks are the file's compile-time checks (signatures, the fields
// and definitions of the types it reads), one var block at its end;
// typedChecks those that must be assignments, not conversions (aliases,
// interfaces), after them; checkFuncs the checks of generic code, which
// need a function each.
type fileChecks struct {
	checks, typedChecks, checkFuncs []jen.Code
}

// fileNames are the names the generated file has handed out.
type fileNames struct {
	aliases    map[string]string // import path → name in the file
	aliasUsed  map[string]bool
	paramNames map[string]bool // every wrapper parameter name: imports avoid them
	globals    map[string]bool // package-level names taken
}

// qual refers to a package-level name of pkg, importing pkg under an alias
// that collides with nothing the generated file or the package declares.
func (e *fileWriter) qual(pkg *types.Package, name string) *jen.Statement {
	if pkg == nil || pkg == e.pi.pkg.Types {
		return jen.Id(name)
	}
	e.importAs(pkg.Path(), pkg.Name())
	return jen.Qual(pkg.Path(), name)
}

// importAs picks the alias of path once: its package name unless that is
// taken by a package-level name, a parameter of any wrapper, a local name
// of the generated code or another import; then name2, name3...
func (e *fileWriter) importAs(path, name string) string {
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

func (e *fileWriter) aliasTaken(a string) bool {
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
func (e *fileWriter) typ(t types.Type) jen.Code {
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
func (e *fileWriter) namedType(t *types.Named) jen.Code {
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
func (e *fileWriter) withArgs(q *jen.Statement, args *types.TypeList) *jen.Statement {
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
func (e *fileWriter) structType(t *types.Struct) jen.Code {
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
func (e *fileWriter) interfaceType(t *types.Interface) jen.Code {
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
func (e *fileWriter) signature(s *types.Signature, names []string) jen.Code {
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

// global reserves a package-level name: base, else base2, base3...
func (e *fileWriter) global(base string) string {
	name := base
	for i := 2; e.globals[name] || e.paramNames[name] || e.aliasUsed[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	e.globals[name] = true
	return name
}

// duration renders d as the Go expression a person would write: 24 * time.Hour.
func (e *fileWriter) duration(d time.Duration) jen.Code {
	units := []struct {
		u    time.Duration
		name string
	}{{time.Hour, "Hour"}, {time.Minute, "Minute"}, {time.Second, "Second"}, {time.Millisecond, "Millisecond"}, {time.Microsecond, "Microsecond"}, {time.Nanosecond, "Nanosecond"}}
	timePkg := types.NewPackage("time", "time")
	for _, u := range units {
		if d%u.u == 0 {
			if d == u.u {
				return e.qual(timePkg, u.name)
			}
			return jen.Lit(int(d / u.u)).Op("*").Add(e.qual(timePkg, u.name))
		}
	}
	return nil
}

// typeParamDecls is x's type parameter list as declared: [E Event, N ~int | ~int64].
func (e *fileWriter) typeParamDecls(x *fn) []jen.Code {
	tps := fnTypeParams(x)
	out := make([]jen.Code, tps.Len())
	for i := range out {
		tp := tps.At(i)
		out[i] = jen.Id(tp.Obj().Name()).Add(e.constraint(tp.Constraint()))
	}
	return out
}

// constraint renders a type parameter's constraint.
func (e *fileWriter) constraint(c types.Type) jen.Code {
	it, ok := c.(*types.Interface)
	if !ok {
		return e.typ(c)
	}
	if it.IsImplicit() && it.NumEmbeddeds() == 1 {
		return e.embedded(it.EmbeddedType(0)) // [N ~int | ~int64]
	}
	var ms []jen.Code
	for i := 0; i < it.NumEmbeddeds(); i++ {
		ms = append(ms, e.embedded(it.EmbeddedType(i)))
	}
	for i := 0; i < it.NumExplicitMethods(); i++ {
		m := it.ExplicitMethod(i)
		ms = append(ms, jen.Id(m.Name()).Add(e.signature(m.Type().(*types.Signature), nil)))
	}
	if len(ms) == 0 {
		return jen.Id("any")
	}
	return jen.Interface(ms...)
}

func (e *fileWriter) embedded(t types.Type) jen.Code {
	u, ok := t.(*types.Union)
	if !ok {
		return e.typ(t)
	}
	terms := make([]jen.Code, u.Len())
	for i := range terms {
		term := u.Term(i)
		if term.Tilde() {
			terms[i] = jen.Op("~").Add(e.typ(term.Type()))
		} else {
			terms[i] = e.typ(term.Type())
		}
	}
	return jen.Union(terms...)
}

// fnTypeParams are the type parameters of a generic function, or of the
// receiver of a method of a generic type (as the method names them).
func fnTypeParams(x *fn) *types.TypeParamList {
	if x.sig.TypeParams().Len() > 0 {
		return x.sig.TypeParams()
	}
	return x.sig.RecvTypeParams()
}
