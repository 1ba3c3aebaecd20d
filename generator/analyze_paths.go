package generator

import (
	"go/types"
	"strings"
)

// resolve checks a path against the function's parameters and types.
func (pi *pkgInfo) resolve(x *fn, p pathOpt, option string) (keyPath, bool) {
	segs := strings.Split(p.text, ".")
	kp := keyPath{opt: p, param: -1}
	t, ok := pi.resolveRoot(x, p, option, segs[0], &kp)
	if !ok {
		return kp, false
	}
	here := segs[0]
	for _, s := range segs[1:] {
		if s == "" {
			pi.d.add(p.pos, "%s: %q is not a path (param.Field.Field)", option, p.text)
			return kp, false
		}
		// A promoted field goes through the embedded fields that hold it:
		// the path is read (and nil-checked) through each of them.
		hops, amb := fieldPath(t, s)
		if len(amb) > 0 {
			pi.d.add(p.pos, "%s: %s.%s is ambiguous: %s is promoted from %s at the same depth (name one: %s)", option, here, s, s, strings.Join(amb, " and "), fullPaths(here, amb, s))
			return kp, false
		}
		if hops == nil {
			hops = []string{s} // not found: reported below, with the type's fields
		}
		for _, h := range hops {
			if t, ok = pi.resolveField(p, option, here, h, t, &kp); !ok {
				return kp, false
			}
			here += "." + h
		}
	}
	kp.typ = t
	return kp, true
}

// resolveRoot finds the parameter (or, for key=, the receiver) a path
// starts at and returns its type.
func (pi *pkgInfo) resolveRoot(x *fn, p pathOpt, option, root string, kp *keyPath) (types.Type, bool) {
	sig := x.sig
	var names []string
	for i := 0; i < sig.Params().Len(); i++ {
		name := sig.Params().At(i).Name()
		if name == "" || name == "_" {
			name = x.params[i].name // the name diagnostics use for it (p2)
		}
		names = append(names, name)
		if names[i] == root {
			kp.param = i
		}
	}
	switch {
	case kp.param < 0 && x.recv != nil && x.recvName != "" && root == x.recvName && option == "key":
		// The receiver's fields may be named (key=s.TenantID): the
		// wrapper reads them through the *T it wraps.
		if p.text == root {
			pi.d.add(p.pos, "key: name fields of the receiver %s (key=%s.Field), not the receiver itself", root, root)
			return nil, false
		}
		kp.recvField = x.recv.Name()
		return recvPointer(x), true
	case kp.param < 0:
		pi.d.add(p.pos, "%s: %s is not a parameter of %s%s", option, root, x.name, didYouMean(root, names)+ifaceHint(x, option))
		return nil, false
	case x.params[kp.param].isCtx:
		pi.d.add(p.pos, "%s: %s is the context; it cannot be part of a key", option, root)
		return nil, false
	}
	return sig.Params().At(kp.param).Type(), true
}

// resolveField takes one step of a path, from here (of type t) to its
// field h, and returns the field's type.
func (pi *pkgInfo) resolveField(p pathOpt, option, here, h string, t types.Type, kp *keyPath) (types.Type, bool) {
	nilable := false
	if ptr, ok := t.Underlying().(*types.Pointer); ok {
		t, nilable = ptr.Elem(), true
	}
	if ok, _ := implements(t, pi.types.keyer); ok && option == "exclude" {
		pi.d.add(p.pos, "exclude: %s implements idem.Keyer, so its IdemKey method decides its key material", here)
		return nil, false
	}
	if ok, _ := implements(t, pi.types.protoMessage); ok && option == "exclude" {
		pi.d.add(p.pos, "exclude: %s is a protobuf message, keyed by its deterministic encoding as a whole", here)
		return nil, false
	}
	if tp, isTP := t.(*types.TypeParam); isTP {
		pi.d.add(p.pos, "%s: %s has the type parameter %s as its type: a path cannot go through it (Go reads no fields through a type parameter); name %s itself with a key method in its constraint, or another parameter", option, here, tp.Obj().Name(), here)
		return nil, false
	}
	st, ok := t.Underlying().(*types.Struct)
	if !ok {
		pi.d.add(p.pos, "%s: %s has type %s, which has no fields (paths go through structs and pointers to structs only)", option, here, pi.typeString(t))
		return nil, false
	}
	var fields []string
	var f *types.Var
	for i := 0; i < st.NumFields(); i++ {
		fields = append(fields, st.Field(i).Name())
		if st.Field(i).Name() == h {
			f = st.Field(i)
		}
	}
	if f == nil {
		pi.d.add(p.pos, "%s: %s has no field %s%s", option, here, h, didYouMean(h, fields))
		return nil, false
	}
	if !f.Exported() && f.Pkg() != pi.pkg.Types {
		pi.d.add(p.pos, "%s: field %s of %s is unexported", option, h, pi.typeString(t))
		return nil, false
	}
	kp.fields = append(kp.fields, h)
	kp.nilable = append(kp.nilable, nilable)
	kp.structs = append(kp.structs, t)
	return f.Type(), true
}

func (kp keyPath) String() string { return kp.opt.text }

// canon is the path as the generated code reads it: promoted fields with
// the embedded fields they come through (req.Account.Base.Tenant for
// req.Account.Tenant). Overlap checks compare canonical paths.
func (kp keyPath) canon(x *fn) string {
	if kp.recvField != "" {
		return "\x00recv." + strings.Join(kp.fields, ".")
	}
	name := x.sig.Params().At(kp.param).Name()
	if name == "" || name == "_" {
		name = x.params[kp.param].name
	}
	for _, f := range kp.fields {
		name += "." + f
	}
	return name
}

// fieldPath finds the field name of t (a struct or a pointer to one) as
// a Go selector does: a field of t itself, else one promoted from an
// embedded struct or pointer to struct, the shallowest depth winning. It
// returns the field names to read, embedded ones first (["Base",
// "Tenant"]); nil if there is no such field; or, when two fields of that
// name are at the same shallowest depth (an ambiguous selector), their
// paths.
func fieldPath(t types.Type, name string) (hops []string, ambiguous []string) {
	type entry struct {
		t   types.Type
		via []string
	}
	current := []entry{{t: t}}
	seen := map[*types.Named]bool{} // types searched at a shallower depth
	for len(current) > 0 {
		var found [][]string
		var next []entry
		here := map[*types.Named]bool{}
		for _, e := range current {
			typ := types.Unalias(e.t)
			if p, ok := typ.Underlying().(*types.Pointer); ok {
				typ = types.Unalias(p.Elem())
			}
			if n, ok := typ.(*types.Named); ok {
				if seen[n] {
					continue
				}
				here[n] = true
			}
			st, ok := typ.Underlying().(*types.Struct)
			if !ok {
				continue
			}
			for i := 0; i < st.NumFields(); i++ {
				f := st.Field(i)
				via := append(e.via[:len(e.via):len(e.via)], f.Name())
				if f.Name() == name {
					found = append(found, via)
				} else if f.Embedded() {
					next = append(next, entry{t: f.Type(), via: via})
				}
			}
		}
		switch len(found) {
		case 0:
		case 1:
			return found[0], nil
		default:
			for _, f := range found {
				ambiguous = append(ambiguous, strings.Join(f[:len(f)-1], "."))
			}
			return nil, ambiguous
		}
		for n := range here {
			seen[n] = true
		}
		current = next
	}
	return nil, nil
}

// fullPaths spells out each ambiguous embedding as the full path that
// names one: req.Account.Base.Tenant or req.Account.Other.Tenant.
func fullPaths(here string, embeddings []string, field string) string {
	out := make([]string, len(embeddings))
	for i, e := range embeddings {
		out[i] = here + "." + e + "." + field
	}
	return strings.Join(out, " or ")
}

// covers reports whether path a is b or a prefix of it (a: req, b: req.ID).
func covers(a, b string) bool {
	return a == b || strings.HasPrefix(b, a+".")
}

// coveredByOther reports whether path i of n is covered by another one:
// a shorter path that holds it, or the same path earlier in the list.
func coveredByOther(i, n int, path func(int) string) bool {
	for j := 0; j < n; j++ {
		if j != i && covers(path(j), path(i)) && (path(j) != path(i) || j < i) {
			return true
		}
	}
	return false
}
