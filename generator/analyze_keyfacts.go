package generator

import (
	"go/types"
	"strings"
)

// What a key helper, and each place a wrapper writes key material,
// refuses and leaves out is decided by the analysis walk (reach.key),
// before anything is written, and worded here (keyWalk and the refusals
// below): render writes the helpers the plan says can be written, and
// reports and names on doc lines what the plan says (funcPlan.keys).

// refuse records that the value at path cannot be keyed.
func (k *keyWalk) refuse(path, reason, hint string) {
	ex := k.exPath
	if k.noAdvice {
		ex = ""
	}
	k.problems = append(k.problems, problem{path: path, reason: reason, hint: hint, exclude: ex})
}

// skip records a path left out, once.
func (k *keyWalk) skip(s string) { k.skipped = addOnce(k.skipped, s) }

// useHelper records, at path, what the helper of f leaves out or, when it
// cannot be written, its problems (recursive: its type reaches itself).
func (k *keyWalk) useHelper(f *keyFacts, path string, recursive bool) {
	if f == nil {
		return // being built: what it leaves out is not known yet
	}
	if f.problems == nil {
		for _, sk := range f.skipped {
			k.skip(path + sk[len(root):])
		}
		return
	}
	for _, p := range f.problems {
		p.path = path + p.path[len(root):]
		p.cycle = p.cycle || recursive
		switch {
		case k.noAdvice:
			p.exclude, p.root, p.idemKey = "", "", ""
		case k.exPath == path:
			p.exclude = path + p.exclude[len(root):]
			if strings.HasPrefix(p.idemKey, root) {
				p.idemKey = path + p.idemKey[len(root):]
			}
			if strings.HasPrefix(p.root, root) {
				p.root = path + p.root[len(root):]
			}
			// The outermost recursive value wins:
			// the advice names one path above it.
			if recursive {
				p.root = path
			}
		default:
			p.exclude, p.root, p.idemKey = k.exPath, "", ""
		}
		k.problems = append(k.problems, p)
	}
}

// The refusals of the key walk.
const (
	oldKeyerReason = "its IdemKey method is not idem.Keyer's IdemKey() any (an IdemKey(*idemimpl.KeyBuilder) written for an older idemgen)"
	oldKeyerHint   = "make it IdemKey() any, returning the value that identifies it"
	keyerHint      = "implement idem.Keyer"
	keyIfaceHint   = "key on concrete fields, make it embed idem.Keyer"
	foreignHint    = "implement idem.Keyer, encoding.BinaryMarshaler or encoding.TextMarshaler on it"
)

// shapeRefusal is why a value of t, of shape s, cannot be keyed by its
// shape (a func, a channel, another type); "" if it can be.
func (pi *pkgInfo) shapeRefusal(t types.Type, s shape, path string) (reason, hint string) {
	switch s.kind {
	case kindBasic:
		if m, _ := keyMethod(s.basic); m == "" {
			return pi.typeString(t) + " cannot be keyed", ""
		}
		return "", ""
	case kindFunc:
		return "func values cannot be keyed", tagHint(path)
	case kindChan:
		return "channels cannot be keyed", tagHint(path)
	}
	return "type " + pi.typeString(t) + " cannot be keyed", ""
}

// ifaceRefusal is why a value of interface t cannot be keyed; union: it
// has variants, none of which can be.
func (pi *pkgInfo) ifaceRefusal(t types.Type, union bool) string {
	if union {
		return "interface " + pi.typeString(t) + " cannot be keyed (no type of its package that implements it can be)"
	}
	return "interface " + pi.typeString(t) + " cannot be keyed"
}

// typeParamRefusal is why a value of tp cannot be keyed, and the hint.
func (pi *pkgInfo) typeParamRefusal(tp *types.TypeParam) (reason, hint string) {
	name := tp.Obj().Name()
	return "type parameter " + name + " (constraint " + pi.typeString(tp.Constraint()) + ") cannot be keyed: the constraint has no key method (IdemKey, MarshalBinary, MarshalText) and its types are not of one basic kind",
		"add idem.Keyer to the constraint of " + name + ", or name other parameters with key="
}

// typeParamSkipped is the payload's note on a value of tp it leaves out.
func typeParamSkipped(path string, tp *types.TypeParam) string {
	return path + " (type parameter " + tp.Obj().Name() + ": not in the payload fingerprint)"
}

// foreignSkipped is why the walk at path leaves out field i of struct u,
// an unexported field of another package's type t, "" if it refuses it
// (lenient: the payload fingerprint). No data is left out silently.
func (pi *pkgInfo) foreignSkipped(t types.Type, u *types.Struct, i int, path string, lenient bool) string {
	f := u.Field(i)
	fp := joinPath(path, f.Name())
	switch n, named := t.(*types.Named); {
	case lenient && idemKeyField(path, u) != "":
		// An SDK's common params: its own IdempotencyKey sits
		// next to them, and key= names the identity.
		return fp + " (unexported: not in the payload fingerprint)"
	case named && jsonSkipped(u.Tag(i)) && !pi.jsonWritten(n):
		// Another package's unexported field that the package keeps
		// out of its JSON (stripe's Params.usage, json:"-"), and no
		// MarshalJSON of its package could write: not part of the
		// request the package sends.
		return fp + ` (unexported, json:"-")`
	}
	return ""
}

// refuseForeign records field i of u, an unexported field of another
// package's type t at path, as refused.
func (k *keyWalk) refuseForeign(pi *pkgInfo, t types.Type, u *types.Struct, i int, path string) {
	k.refuse(joinPath(path, u.Field(i).Name()), "unexported field of "+pi.typeString(t), foreignHint)
	k.problems[len(k.problems)-1].idemKey = idemKeyField(path, u)
}

// tagHint suggests the struct tag for a field (not for a parameter or an
// element).
func tagHint(path string) string {
	if strings.Contains(path, ".") && !strings.HasSuffix(path, "]") {
		return `tag the field idem:"-"`
	}
	return ""
}
