package generator

import (
	"go/types"
)

// keyHelpersWritten are the key helpers of the plan as the file holds
// them: those written and those refused (by the plan's facts), in the
// plan's order, then any written that the plan does not list. Tests
// compare them with the plan (helpersWritten).
func (e *emitter) keyHelpersWritten() []helperPlan {
	var out []helperPlan
	seen := map[helperKey]bool{}
	for _, h := range e.plan.Helpers {
		for hk, f := range e.plan.keyFacts {
			if written := e.keysWritten[hk]; keyKind(hk) == h.Kind && f.typ == h.Type && (written || f.problems != nil) {
				out, seen[hk] = append(out, h), true
			}
		}
	}
	for hk := range e.keysWritten {
		if !seen[hk] {
			out = append(out, helperPlan{Kind: keyKind(hk), Type: "unplanned " + types.TypeString(hk.obj.Type(), nil) + hk.inst})
		}
	}
	return out
}

// codecHelpersWritten are the codec helpers of the plan as the file holds
// them: written, or failed and not written, in the plan's order; in a
// file refused (a wrapper that reaches a helper may be the reason) also
// those not written. Tests compare them with the plan (helpersWritten).
func (e *emitter) codecHelpersWritten(refused bool) []helperPlan {
	var out []helperPlan
	for _, h := range e.plan.Helpers {
		written := e.codecWritten[h.Type]
		if h.Kind == codecKind(h.Type) && (written != h.Failed || refused && !written) {
			out = append(out, h)
		}
	}
	return out
}

// siteAt is sites[i], nil past its end.
func siteAt(sites []*keyWalk, i int) *keyWalk {
	if i < len(sites) {
		return sites[i]
	}
	return nil
}

// plannedKeySite returns what the analysis decided the key refuses and
// leaves out at path (x.plan.keys), which the wrapper reports and its doc
// line names; a writer that wrote (good) what it refuses, or refused
// what it did not, is reported as an idemgen defect.
func (e *emitter) plannedKeySite(x *fn, site *keyWalk, good bool, path string) *keyWalk {
	if site == nil {
		site = &keyWalk{}
	}
	if good == (len(site.problems) > 0) {
		e.pi.d.add(e.pi.fset.Position(x.pos), "internal error: %s: the key of %s is written: %v, which the analysis decided otherwise (%v)",
			x.what(), path, good, site.problems)
	}
	return site
}
