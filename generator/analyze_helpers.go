package generator

import (
	"go/types"
	"strconv"
	"strings"
)

// The helpers of a file: the key helpers (idemKeyT) and codec helpers
// (idemEncT, idemDecT) of its named types, each written once and shared by
// every wrapper that reaches its type. Whether a helper is written, fails
// or recurses the analysis walk (analyze_reach.go) decides through a
// helperBook; the writers (render_key_helpers.go, render_codec_values.go)
// write the helpers the plan lists as not failed, and no others.

// helperState is where a helper stands.
type helperState struct {
	// building: its body is being walked or written; a use meanwhile
	// makes it recursive.
	building, recursive bool
	failed              bool
}

// helperBook keeps the helpers of one kind in the order they are decided.
// The rules: a helper is decided on its first use and kept; a use while
// it is being built is a recursion, which is assumed to succeed; a helper
// that fails is kept as failed, and the helpers completed while it was
// being built are dropped (they may name it), to be decided again on
// their next use, which then meets the failure.
type helperBook[K comparable] struct {
	states map[K]*helperState
	// done are the helpers completed (not failed), in order; first the
	// order the helpers were first decided in, for the plan.
	done, first []K
	// names are the helpers' types as the plan shows them; bases the
	// function names they would have, before numbering (helperNamer).
	names, bases map[K]string
}

func newHelperBook[K comparable]() *helperBook[K] {
	return &helperBook[K]{states: map[K]*helperState{}, names: map[K]string{}, bases: map[K]string{}}
}

// use returns the state of k, nil when k is not decided (or was
// dropped): the caller builds it (start, finish). A use of a helper being
// built marks it recursive.
func (b *helperBook[K]) use(k K) *helperState {
	st := b.states[k]
	if st != nil && st.building {
		st.recursive = true
	}
	return st
}

// start begins building k, the helper of the type typ names, whose
// function would be named base; the mark goes to finish.
func (b *helperBook[K]) start(k K, typ, base string) (mark int) {
	if _, listed := b.names[k]; !listed {
		b.names[k], b.bases[k] = typ, base
		b.first = append(b.first, k)
	}
	b.states[k] = &helperState{building: true}
	return len(b.done)
}

// finish ends building k: ok, or failed. A failure drops the helpers
// completed since mark and returns them.
func (b *helperBook[K]) finish(k K, mark int, ok bool) (dropped []K) {
	st := b.states[k]
	st.building = false
	if ok {
		b.done = append(b.done, k)
		return nil
	}
	st.failed = true
	dropped = append(dropped, b.done[mark:]...)
	for _, d := range dropped {
		delete(b.states, d)
	}
	b.done = b.done[:mark]
	return dropped
}

// plans are the book's helpers as the plan lists them, in the order they
// were first decided, with their facts if any and the names of those
// written; one dropped and never decided again is not listed.
func (b *helperBook[K]) plans(kindOf func(K) string, facts map[K]*keyFacts, names *helperNamer) []helperPlan {
	var out []helperPlan
	for _, k := range b.first {
		if st := b.states[k]; st != nil {
			h := helperPlan{Kind: kindOf(k), Type: b.names[k], Recursive: st.recursive, Failed: st.failed}
			if !st.failed {
				h.Name = names.pick(b.bases[k])
			}
			if f := facts[k]; f != nil {
				for _, p := range f.problems {
					h.Problems = append(h.Problems, strings.TrimPrefix(p.path, root)+": "+p.reason)
				}
				for _, sk := range f.skipped {
					h.Skipped = append(h.Skipped, strings.TrimPrefix(sk, root))
				}
			}
			out = append(out, h)
		}
	}
	return out
}

// keyKind is the kind of a key helper in the plan.
func keyKind(hk helperKey) string {
	if hk.lenient {
		return "payload"
	}
	return "key"
}

func codecKind(string) string { return "codec" }

// helperNamer names the helpers of a file in the plan's order: a base
// unless the package, a wrapper's parameter or receiver or an earlier
// helper has that name, else the base numbered from 2. A codec helper
// takes its decoder's name too. Render reserves them all before it names
// anything else (newEmitter), so no import or variable takes one.
type helperNamer struct {
	taken map[string]bool
}

func (pi *pkgInfo) newHelperNamer(fns, steps []*fn) *helperNamer {
	taken := paramNamesOf(fns, steps)
	for k := range pi.scope {
		taken[k] = true
	}
	return &helperNamer{taken: taken}
}

// paramNamesOf are the names of the parameters and receivers of the
// wrappers of fns and steps: a package-level name of the generated file
// must not be one of them (it would be shadowed).
func paramNamesOf(fns, steps []*fn) map[string]bool {
	names := map[string]bool{}
	for _, x := range append(append([]*fn(nil), fns...), steps...) {
		for _, prm := range x.params {
			names[prm.name] = true
		}
		if x.recvName != "" {
			names[x.recvName] = true // a receiver shadows like a parameter
		}
	}
	return names
}

func (n *helperNamer) pick(base string) string {
	name := base
	for i := 2; n.taken[name] || n.taken[decoderOf(name)]; i++ {
		name = base + strconv.Itoa(i)
	}
	n.taken[name] = true
	if dec := decoderOf(name); dec != "" {
		n.taken[dec] = true
	}
	return name
}

// decoderOf is the decoder's name of the codec helper enc, "" for a key
// helper.
func decoderOf(enc string) string {
	if t, ok := strings.CutPrefix(enc, "idemEnc"); ok {
		return "idemDec" + t
	}
	return ""
}

// keyHelperBase is the name of n's key helper before numbering.
func (pi *pkgInfo) keyHelperBase(n *types.Named) string {
	prefix := ""
	if p := n.Obj().Pkg(); p != pi.pkg.Types {
		prefix = upperFirst(p.Name())
	}
	return "idemKey" + prefix + upperFirst(n.Obj().Name()) + pi.instanceSuffix(n)
}

// codecHelperBase is the name of n's encoder before numbering; omit=
// specialises it for the function spec names.
func (pi *pkgInfo) codecHelperBase(n *types.Named, spec string, omit omitTree) string {
	base := n.Obj().Name() + pi.instanceSuffix(n)
	if p := n.Obj().Pkg(); p != pi.pkg.Types {
		base = upperFirst(p.Name()) + base
	}
	if len(omit) > 0 {
		base += "For" + spec
	}
	return "idemEnc" + base
}

// instanceSuffix ends the names of an instance's helpers: its type
// arguments spelt as identifiers (Opt[int64] → _int64, Page[sdk.Invoice]
// → _SdkInvoice). Two instances that spell alike get numbers (helperNamer).
func (pi *pkgInfo) instanceSuffix(n *types.Named) string {
	if n.TypeArgs().Len() == 0 {
		return ""
	}
	var b strings.Builder
	for i := 0; i < n.TypeArgs().Len(); i++ {
		b.WriteByte('_')
		pi.mangle(&b, n.TypeArgs().At(i))
	}
	return b.String()
}

func (pi *pkgInfo) mangle(b *strings.Builder, t types.Type) {
	switch t := types.Unalias(t).(type) {
	case *types.Basic:
		b.WriteString(t.Name())
	case *types.Named:
		if p := t.Obj().Pkg(); p != nil && p != pi.pkg.Types {
			b.WriteString(upperFirst(p.Name()))
		}
		b.WriteString(t.Obj().Name())
		if t.TypeArgs().Len() > 0 {
			b.WriteString(pi.instanceSuffix(t))
		}
	case *types.Pointer:
		b.WriteString("Ptr")
		pi.mangle(b, t.Elem())
	case *types.Slice:
		b.WriteString("Slice")
		pi.mangle(b, t.Elem())
	case *types.Array:
		b.WriteString("Array" + strconv.Itoa(int(t.Len())))
		pi.mangle(b, t.Elem())
	case *types.Map:
		b.WriteString("Map")
		pi.mangle(b, t.Key())
		b.WriteString("To")
		pi.mangle(b, t.Elem())
	default:
		b.WriteString("T")
	}
}
