package generator

import (
	"go/types"
	"sort"
)

func newDriftFacts() *driftFacts {
	return &driftFacts{
		fields:    map[*types.TypeName]*types.Named{},
		instances: map[string]*types.Named{},
		pinned:    map[*types.TypeName]types.Type{},
	}
}

// seal ends the noting of facts: render reads them, and a fact it
// noted itself would be one the analysis (and a test of it) missed.
func (d *driftFacts) seal() { d.sealed = true }

// noting panics once d is sealed.
func (d *driftFacts) noting() {
	if d.sealed {
		panic("drift fact noted while writing")
	}
}

// readFields notes that the code of x reads the fields of n.
func (d *driftFacts) readFields(x *fn, n *types.Named) {
	d.noting()
	switch _, isStruct := n.Underlying().(*types.Struct); {
	case !isStruct:
	case mentionsTypeParam(n):
		d.readGeneric(x, n)
	case n.TypeArgs().Len() > 0:
		d.instances[instanceKey(n)] = n
	default:
		d.fields[n.Obj()] = n
	}
}

// readGeneric notes that the code of x reads the fields of n, an
// instance that mentions x's type parameters; once per function.
func (d *driftFacts) readGeneric(x *fn, n *types.Named) {
	d.noting()
	if x == nil {
		return
	}
	for _, r := range d.generic {
		if r.x == x && types.TypeString(r.n, nil) == types.TypeString(n, nil) {
			return
		}
	}
	d.generic = append(d.generic, genericRead{x, n})
}

// pinAlias notes that the code relies on what alias t stands for; other
// types are ignored, and so are aliases of structs (their helpers take
// the struct type itself) and interfaces (not converted).
func (d *driftFacts) pinAlias(t types.Type) {
	d.noting()
	a, ok := t.(*types.Alias)
	if !ok || a.TypeArgs().Len() > 0 {
		return
	}
	switch types.Unalias(a).Underlying().(type) {
	case *types.Struct, *types.Interface:
		return
	}
	d.pinned[a.Obj()] = a
}

// pinNamed notes that the code relies on n's underlying type (structs
// are checked by their field lists, interfaces are not converted).
func (d *driftFacts) pinNamed(n *types.Named) {
	d.noting()
	switch n.Underlying().(type) {
	case *types.Struct, *types.Interface:
		return
	}
	if n.TypeArgs().Len() == 0 {
		d.pinned[n.Obj()] = n
	}
}

// pathDrift are the drift facts of fns' key= and order= paths: the
// structs each path reads on its way (funcPlan.Reads), per function in
// order, so a generic instance is checked inside its function.
func pathDrift(fns []*fn) *driftFacts {
	d := newDriftFacts()
	for _, x := range fns {
		for _, n := range x.plan.resolved.reads {
			d.readFields(x, n)
		}
	}
	return d
}

// list spells d for tests and comparisons: "read T" for each struct read
// (instances included), "pin T" and "alias T" for each type pinned,
// sorted; then "generic F: T[S]" for each generic read, in order. Types
// are qualified by their package's path.
func (d *driftFacts) list() []string {
	q := func(p *types.Package) string { return p.Path() }
	var out []string
	for _, n := range d.fields {
		out = append(out, "read "+types.TypeString(n, q))
	}
	for _, n := range d.instances {
		out = append(out, "read "+types.TypeString(n, q))
	}
	for _, t := range d.pinned {
		kind := "pin "
		if _, ok := t.(*types.Alias); ok {
			kind = "alias "
		}
		out = append(out, kind+types.TypeString(t, q))
	}
	sort.Strings(out)
	for _, r := range d.generic {
		out = append(out, "generic "+r.x.name+": "+types.TypeString(r.n, q))
	}
	return out
}
