package generator

import (
	"crypto/sha256"
	"encoding/hex"
	"go/ast"
	"go/token"
	"go/types"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Function identity. A function's name (name=, or its import path and
// name) is its key space at run time: two functions with one name would
// answer each other's calls. So names are unique across all packages of
// a run (checkNames), and every Spec carries a Signature that the
// runtime stores in each record and checks on every replay, for the
// functions no single run sees together (two modules, two runs).

// signature is the Spec.Signature of x: a digest of its name, version and
// the skeleton of its parameter and result types. The skeleton keeps
// kinds and structure (pointer, slice, map, the basic kind) and drops
// what a compatible change alters: struct fields (results decode across
// added and removed fields), type names (renaming a type is not a new
// function) and the Go function's own name (name= survives renames).
// 16 hex digits: records carry it, and it only has to tell apart the
// handful of functions that could share one name.
func signature(name string, version int, sig *types.Signature) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteString("\x00v")
	b.WriteString(strconv.Itoa(version))
	b.WriteString("\x00")
	b.WriteString(shapeSkeleton(sig))
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// shapeSkeleton is the skeleton of sig's parameters and results, without
// the receiver: "(ctx,string,*struct)(*struct,error)".
func shapeSkeleton(sig *types.Signature) string {
	var b strings.Builder
	tuple := func(t *types.Tuple) {
		b.WriteByte('(')
		for i := 0; i < t.Len(); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			writeSkeleton(&b, t.At(i).Type(), map[*types.Named]bool{})
		}
		b.WriteByte(')')
	}
	if n := sig.TypeParams().Len(); n > 0 {
		// A generic function: how many type parameters; their uses
		// below are $0, $1… (a constraint may change as a type may).
		b.WriteString("[" + strconv.Itoa(n) + "]")
	}
	tuple(sig.Params())
	tuple(sig.Results())
	return b.String()
}

func writeSkeleton(b *strings.Builder, t types.Type, seen map[*types.Named]bool) {
	t = types.Unalias(t)
	if tp, ok := t.(*types.TypeParam); ok {
		b.WriteString("$" + strconv.Itoa(tp.Index()))
		return
	}
	if n, ok := t.(*types.Named); ok {
		if obj := n.Obj(); obj.Pkg() == nil && obj.Name() == "error" {
			b.WriteString("error")
			return
		}
		if obj := n.Obj(); obj.Pkg() != nil && obj.Pkg().Path() == "context" && obj.Name() == "Context" {
			b.WriteString("ctx")
			return
		}
		if seen[n] {
			b.WriteString("@") // a recursive type, named by its cycle
			return
		}
		seen[n] = true
		defer delete(seen, n)
	}
	switch s := shapeOf(t); s.kind {
	case kindBasic:
		b.WriteString(basicSkeleton(s.basic))
	case kindPointer:
		b.WriteByte('*')
		writeSkeleton(b, s.elem, seen)
	case kindSlice:
		b.WriteString("[]")
		writeSkeleton(b, s.elem, seen)
	case kindArray:
		b.WriteString("[" + strconv.FormatInt(s.len, 10) + "]")
		writeSkeleton(b, s.elem, seen)
	case kindMap:
		b.WriteString("map[")
		writeSkeleton(b, s.key, seen)
		b.WriteByte(']')
		writeSkeleton(b, s.elem, seen)
	case kindStruct:
		b.WriteString("struct")
	case kindInterface:
		b.WriteString("interface")
	case kindFunc:
		b.WriteString("func")
	case kindChan:
		b.WriteString("chan")
	default:
		b.WriteString("?")
	}
}

// basicSkeleton groups basic kinds as the result codec stores them:
// integers of any width are one integer, unsigned ones another.
func basicSkeleton(t *types.Basic) string {
	switch i := t.Info(); {
	case t.Kind() == types.Bool:
		return "bool"
	case t.Kind() == types.String:
		return "string"
	case t.Kind() == types.UnsafePointer:
		return "unsafe"
	case i&types.IsUnsigned != 0:
		return "uint"
	case i&types.IsInteger != 0:
		return "int"
	case t.Kind() == types.Float32:
		return "float32"
	case i&types.IsFloat != 0:
		return "float64"
	case i&types.IsComplex != 0:
		return "complex"
	}
	return t.Name()
}

// checkNames reports every annotated function whose name another one in
// the same run also has, once per function, naming the other, and
// returns the packages of those functions (they get no generated file).
// It reads only the directives' name= options: the rest of each
// directive is checked (and reported) by the package's own analysis.
func checkNames(pkgs []*packages.Package, fset *token.FileSet, outputs map[*packages.Package]string, d *diags) map[*packages.Package]bool {
	byName := map[string][]namedFunc{}
	for _, p := range pkgs {
		if p.TypesInfo == nil {
			continue
		}
		for _, f := range p.Syntax {
			if fset.Position(f.Pos()).Filename == outputs[p] {
				continue
			}
			for _, nf := range annotatedVars(p, fset, f) {
				byName[nf.name] = append(byName[nf.name], nf)
			}
			for _, decl := range f.Decls {
				if gd, ok := decl.(*ast.GenDecl); ok {
					for _, nf := range ifaceNamedFuncs(p, fset, gd) {
						byName[nf.name] = append(byName[nf.name], nf)
					}
					continue
				}
				fd, ok := decl.(*ast.FuncDecl)
				if !ok || fd.Doc == nil {
					continue
				}
				if nf, ok := annotatedName(p, fset, fd); ok {
					byName[nf.name] = append(byName[nf.name], nf)
				}
			}
		}
	}
	bad := map[*packages.Package]bool{}
	for name, fs := range byName {
		if len(fs) < 2 {
			continue
		}
		sort.Slice(fs, func(i, j int) bool { return positionLess(fs[i].pos, fs[j].pos) })
		for i, f := range fs {
			other := fs[(i+1)%len(fs)]
			if i > 0 {
				other = fs[0]
			}
			d.add(f.pos, "name %q of %s is also the name of %s (at %s): two functions with one name share a key space and would answer each other's calls; give each its own name=",
				name, f.display, other.display, d.relative(other.pos, f.pos))
			bad[f.pkg] = true
		}
	}
	return bad
}

// annotatedName is fd's function name as its Spec carries it, if fd has
// //idem: directives; directive errors are left to the package's analysis.
func annotatedName(p *packages.Package, fset *token.FileSet, fd *ast.FuncDecl) (namedFunc, bool) {
	var lines []*ast.Comment
	for _, c := range fd.Doc.List {
		if isDirective(c) {
			lines = append(lines, c)
		}
	}
	if len(lines) == 0 {
		return namedFunc{}, false
	}
	opts, _ := parseDirectives(fset, lines, &diags{})
	obj, _ := p.TypesInfo.Defs[fd.Name].(*types.Func)
	if obj == nil {
		return namedFunc{}, false
	}
	nf := namedFunc{pkg: p, name: p.PkgPath + "." + fd.Name.Name, display: p.Name + "." + fd.Name.Name, pos: fset.Position(fd.Name.Pos())}
	if r := obj.Type().(*types.Signature).Recv(); r != nil {
		t := r.Type()
		if ptr, ok := t.(*types.Pointer); ok {
			t = ptr.Elem()
		}
		if named, ok := types.Unalias(t).(*types.Named); ok {
			nf.name = p.PkgPath + "." + named.Obj().Name() + "." + fd.Name.Name
			nf.display = p.Name + "." + named.Obj().Name() + "." + fd.Name.Name
		}
	}
	if opts.name != "" {
		nf.name = opts.name
		if o, ok := opts.given["name"]; ok {
			nf.pos = o.pos
		}
	}
	return nf, true
}

func positionLess(a, b token.Position) bool {
	if a.Filename != b.Filename {
		return a.Filename < b.Filename
	}
	if a.Line != b.Line {
		return a.Line < b.Line
	}
	return a.Column < b.Column
}
