package generator

import (
	"go/token"
	"strconv"
	"strings"
)

// reportLine is one diagnostic line for the problems of one kind (one
// reason, which names the type) found in one function.
type reportLine struct {
	text     string   // "path[ and N more (…)]: reason"
	hint     string   // of the first problem
	first    int      // index of the first problem of the group
	excludes []string // exclude= paths that lift the group, "" if none can
}

// maxListed is how many further paths a collapsed line names.
const maxListed = 3

// collapse groups problems by reason, in order of first occurrence, so one
// refused type makes one line per function however many paths reach it.
func collapse(probs []problem) []reportLine {
	var lines []reportLine
	groups := map[string][]int{}
	var order []string
	for i, p := range probs {
		if _, ok := groups[p.reason]; !ok {
			order = append(order, p.reason)
		}
		groups[p.reason] = append(groups[p.reason], i)
	}
	for _, reason := range order {
		idx := groups[reason]
		first := probs[idx[0]]
		var b strings.Builder
		b.WriteString(first.path)
		if n := len(idx) - 1; n > 0 {
			b.WriteString(" and " + strconv.Itoa(n) + " more (")
			for j, k := range idx[1:] {
				if j == maxListed {
					b.WriteString(", …")
					break
				}
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString(probs[k].path)
			}
			b.WriteString(")")
		}
		b.WriteString(": " + reason)
		line := reportLine{text: b.String(), hint: first.hint, first: idx[0]}
		for _, k := range idx {
			ex := probs[k].exclude
			if ex == "" {
				line.excludes = nil
				break
			}
			line.excludes = addPath(line.excludes, ex)
		}
		lines = append(lines, line)
	}
	return lines
}

// addPath adds p to a list of paths none of which covers another.
func addPath(list []string, p string) []string {
	out := list[:0:0]
	for _, q := range list {
		if covers(q, p) {
			return list
		}
		if !covers(p, q) {
			out = append(out, q)
		}
	}
	return append(out, p)
}

// report writes the problems of a function's default key (or payload),
// one line per kind. A line that exclude= would lift ends with the exact
// option to write, merged with the exclude= already given, so following
// the advice always makes progress.
func (e *fileWriter) report(x *fn, probs []problem, at []token.Position, keyPaths []keyPath) {
	shallowest(x, probs, keyPaths)
	lines := collapse(probs)
	// Across lines too, a path under another line's path is advised as
	// that path: following every line of one run at once converges.
	var all []string
	for _, l := range lines {
		for _, p := range l.excludes {
			all = addPath(all, p)
		}
	}
	for i, l := range lines {
		var merged []string
		for _, p := range l.excludes {
			for _, q := range all {
				if covers(q, p) {
					merged = addPath(merged, q)
				}
			}
		}
		lines[i].excludes = merged
	}
	// An exclude= that would drop the SDK's own idempotency key is not
	// advised: keying on that key is (the payload fingerprint under key=
	// skips the unexported fields).
	var idemKeys []string
	for _, p := range probs {
		if p.idemKey != "" && p.exclude != "" {
			idemKeys = addOnce(idemKeys, p.idemKey)
		}
	}
	for _, line := range lines {
		advice := adviseExclude(x, line.excludes, keyPaths)
		if k := dropsIdemKey(line.excludes, idemKeys); k != "" && len(keyPaths) == 0 {
			advice = "add `key=" + k + "`"
		}
		e.pi.d.add(at[line.first], "%s: cannot key %s%s", x.name, line.text, paren(line.hint, advice))
	}
}

// dropsIdemKey returns the first idempotency key path one of the exclude=
// paths covers, "" if none.
func dropsIdemKey(excludes, idemKeys []string) string {
	for _, k := range idemKeys {
		for _, p := range excludes {
			if covers(p, k) {
				return k
			}
		}
	}
	return ""
}

// shallowest makes each problem inside a value of a recursive type
// advise that value: an exclude= below it would advise again, one level
// deeper, on the next run (http.Request ↔ http.Response). A root that
// overlaps a key= path cannot be excluded and is not advised.
func shallowest(x *fn, probs []problem, keyPaths []keyPath) {
next:
	for i, p := range probs {
		if p.root == "" || p.exclude == "" || !p.cycle || !covers(p.root, p.exclude) {
			continue
		}
		for _, kp := range keyPaths {
			if covers(p.root, kp.canon(x)) || covers(kp.canon(x), p.root) {
				continue next
			}
		}
		probs[i].exclude = p.root
	}
}

// paren ends a diagnostic: (hint, or advice), (hint) or (advice). For a
// key= or order= path, which exclude= cannot lift, keyOnOther adds the way
// out.
func paren(hint, advice string) string {
	switch {
	case hint != "" && advice != "":
		return " (" + hint + ", or " + advice + ")"
	case hint != "":
		return " (" + hint + ")"
	case advice != "":
		return " (" + advice + ")"
	}
	return ""
}

// keyLine is a problem line of a key= or order= path; way is the way out
// (key on other fields, name another entity).
func keyLine(line reportLine, way string) string {
	h := way
	if line.hint != "" {
		h = line.hint + ", or " + h
	}
	return line.text + " (" + h + ")"
}

// adviseExclude returns "add `exclude=…`" for the paths, leaving out those
// that overlap a key= path (exclude= must not name them: the key= line
// reports them), or "" when none is left.
func adviseExclude(x *fn, paths []string, keyPaths []keyPath) string {
	var free []string
next:
	for _, p := range paths {
		for _, kp := range keyPaths {
			if covers(p, kp.canon(x)) || covers(kp.canon(x), p) {
				continue next
			}
		}
		free = append(free, p)
	}
	if len(free) == 0 {
		return ""
	}
	var merged []string
	for _, old := range x.opts.exclude {
		merged = addPath(merged, old.text)
	}
	for _, p := range free {
		merged = addPath(merged, p)
	}
	verb := "add"
	if _, given := x.opts.given["exclude"]; given {
		verb = "change exclude= to"
	}
	return verb + " `exclude=" + strings.Join(merged, ",") + "`"
}
