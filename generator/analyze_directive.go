package generator

import (
	"go/ast"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// directivePrefix starts an annotation line in a doc comment.
const directivePrefix = "//idem:"

// optionNames lists the options of a //idem: directive, in the order the
// generated doc comment shows them.
var optionNames = []string{"ttl", "lease", "on_duplicate", "on_failure", "key", "exclude", "name", "version", "wait", "order", "grace", "omit", "as", "max_result"}

var (
	duplicateModes = []string{"return", "raise", "wait"}
	failureModes   = []string{"unlock", "lock"}
	// A name= is part of every store key: keep it to characters that need
	// no escaping anywhere (Redis, SQL, file names) and exclude ':', the
	// separator of the key's parts.
	nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_./\-]*$`)
)

// DirectEscape starts the comment that lets one call of an annotated
// function skip its wrapper on purpose ("//idem:direct the retry loop
// above is the guard"). The vet analyzer (vet/idemvet) reads it; to the
// generator it is an ordinary comment, wherever it stands.
const DirectEscape = "//idem:direct"

// isDirective reports whether a comment line is an //idem: directive.
func isDirective(c *ast.Comment) bool { return IsDirective(c.Text) }

// IsDirective reports whether a comment's text (as in ast.Comment.Text)
// is an //idem: directive line. The //idem:direct escape is not one.
func IsDirective(text string) bool {
	if _, ok := ParseDirectEscape(text); ok {
		return false
	}
	return strings.HasPrefix(text, directivePrefix)
}

// ParseDirectEscape reports whether a comment's text is an //idem:direct
// escape, and returns its reason ("" when none is given).
func ParseDirectEscape(text string) (reason string, ok bool) {
	rest, ok := strings.CutPrefix(text, DirectEscape)
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// isMangledDirective spots "// idem:" lines: what gofmt makes of a bare
// "//idem:" (a directive needs a character after the colon), or a
// directive written with a space. Left alone, the function would silently
// lose its guard.
func isMangledDirective(c *ast.Comment) bool {
	rest, ok := strings.CutPrefix(c.Text, "// idem:")
	if !ok {
		return false
	}
	for _, f := range strings.Fields(rest) {
		if name, _, _ := strings.Cut(f, "="); !slices.Contains(optionNames, name) {
			return false
		}
	}
	return true
}

// parseDirectives merges the //idem: lines of one doc comment. It reports
// every problem, not only the first.
func parseDirectives(fset *token.FileSet, lines []*ast.Comment, d *diags) (options, bool) {
	return parseDirectivesOver(fset, lines, d, options{})
}

// parseDirectivesOver parses lines over the options of over: an option of
// lines replaces over's (an interface method's own directive over its
// interface's).
func parseDirectivesOver(fset *token.FileSet, lines []*ast.Comment, d *diags, over options) (options, bool) {
	o := over
	o.given = map[string]option{}
	for k, v := range over.given {
		o.given[k] = v
	}
	o.order = append([]string(nil), over.order...)
	here := map[string]option{} // given twice means twice in lines
	ok := true
	bad := func(pos token.Position, format string, args ...any) {
		d.add(pos, format, args...)
		ok = false
	}
	for i, c := range lines {
		base := fset.Position(c.Slash)
		if i == 0 {
			o.pos = base
		}
		text := c.Text[len(directivePrefix):]
		off := len(directivePrefix)
		for _, f := range fieldsWithOffsets(text) {
			pos := base
			pos.Column += off + f.off
			pos.Offset += off + f.off
			name, value, hasEq := strings.Cut(f.s, "=")
			valPos := pos
			valPos.Column += len(name) + 1
			valPos.Offset += len(name) + 1
			if !slices.Contains(optionNames, name) {
				bad(pos, "unknown option %q%s", name, didYouMean(name, optionNames))
				continue
			}
			if prev, dup := here[name]; dup {
				bad(pos, "option %s given twice (first at %d:%d)", name, prev.pos.Line, prev.pos.Column)
				continue
			}
			if !hasEq || value == "" {
				bad(pos, "option %s needs a value: %s=%s", name, name, example(name))
				continue
			}
			o.given[name] = option{name: name, value: value, pos: pos, valPos: valPos}
			here[name] = o.given[name]
			o.order = append(o.order, name)
			if err := o.set(name, value, valPos); err != "" {
				bad(valPos, "%s", err)
			}
		}
	}
	if w, ok2 := o.given["wait"]; ok2 && o.onDuplicate != "wait" {
		bad(w.pos, "option wait only applies with on_duplicate=wait")
	}
	if g, ok2 := o.given["grace"]; ok2 {
		if _, ordered := o.given["order"]; !ordered {
			bad(g.pos, "option grace only applies with order=ENTITY:TIME")
		}
	}
	return o, ok
}

func example(name string) string {
	switch name {
	case "ttl":
		return "24h"
	case "lease", "wait":
		return "30s"
	case "on_duplicate":
		return "return|raise|wait"
	case "on_failure":
		return "unlock|lock"
	case "key", "exclude":
		return "req.ID,userID"
	case "omit":
		return "r2,out.ResultMetadata"
	case "name":
		return "billing.CreateInvoice"
	case "as":
		return "NewPaymentIntent"
	case "version":
		return "1"
	case "order":
		return "req.UserID:req.Timestamp"
	case "grace":
		return "5m"
	case "max_result":
		return "256KiB"
	}
	return "..."
}

// set parses one option's value; it returns a message on error.
func (o *options) set(name, value string, pos token.Position) string {
	switch name {
	case "ttl":
		return o.setTTL(value)
	case "lease", "wait", "grace":
		return o.setDuration(name, value)
	case "on_duplicate":
		if !slices.Contains(duplicateModes, value) {
			return "on_duplicate: " + strconv.Quote(value) + " is not one of return, raise, wait" + didYouMean(value, duplicateModes)
		}
		o.onDuplicate = value
	case "on_failure":
		if !slices.Contains(failureModes, value) {
			return "on_failure: " + strconv.Quote(value) + " is not one of unlock, lock" + didYouMean(value, failureModes)
		}
		o.onFailure = value
	case "key", "exclude", "omit":
		return o.setPaths(name, value, pos)
	case "order":
		return o.setOrder(value, pos)
	case "name":
		if !nameRE.MatchString(value) {
			return "name: " + strconv.Quote(value) + " is not a stable name (letters, digits and _ . / -, starting with a letter)"
		}
		o.name = value
	case "as":
		if !token.IsIdentifier(value) || value == "_" {
			return "as: " + strconv.Quote(value) + " is not a Go identifier (as=NewPaymentIntent)"
		}
		o.as = value
	case "version":
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 {
			return "version: " + strconv.Quote(value) + " is not a non-negative integer"
		}
		o.version = n
	case "max_result":
		n, ok := parseSize(value)
		if !ok {
			return "max_result: " + strconv.Quote(value) + " is not a positive size (4096, 512KB, 256KiB, 1MiB)"
		}
		o.maxResult = n
	}
	return ""
}

// sizeUnits are the units max_result= takes, longest first.
var sizeUnits = []struct {
	suffix string
	n      int
}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"B", 1}}

// parseSize reads a positive byte count with an optional unit.
func parseSize(s string) (int, bool) {
	unit := 1
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, unit = strings.TrimSuffix(s, u.suffix), u.n
			break
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > (1<<31-1)/unit {
		return 0, false
	}
	return n * unit, true
}

// setTTL takes a duration or a number of seconds.
func (o *options) setTTL(value string) string {
	d, err := time.ParseDuration(value)
	if err != nil {
		n, nerr := strconv.ParseInt(value, 10, 64)
		if nerr != nil {
			return "ttl: " + strconv.Quote(value) + " is neither a duration (24h, 90m) nor a number of seconds"
		}
		if n > int64((1<<63-1)/time.Second) {
			return "ttl: " + value + " seconds is out of range"
		}
		d = time.Duration(n) * time.Second
	}
	if d <= 0 {
		return "ttl must be positive, not " + value
	}
	o.ttl = d
	return ""
}

// setDuration sets lease, wait (at least 1ms) or grace (not negative).
func (o *options) setDuration(name, value string) string {
	d, err := time.ParseDuration(value)
	if err != nil {
		hint := ""
		if _, nerr := strconv.Atoi(value); nerr == nil {
			hint = " (write a unit: " + value + "s)"
		}
		return name + ": " + strconv.Quote(value) + " is not a duration" + hint
	}
	switch {
	case name == "grace" && d < 0:
		return "grace must not be negative, not " + value
	case name != "grace" && d < time.Millisecond:
		return name + " must be at least 1ms, not " + value
	}
	*map[string]*time.Duration{"lease": &o.lease, "wait": &o.wait, "grace": &o.grace}[name] = d
	return ""
}

// setPaths sets key=, exclude= or omit=: comma-separated paths, each with
// its own position.
func (o *options) setPaths(name, value string, pos token.Position) string {
	var paths []pathOpt
	off := 0
	for _, p := range strings.Split(value, ",") {
		pp := pos
		pp.Column += off
		pp.Offset += off
		off += len(p) + 1
		if p == "" {
			return name + ": empty path in " + strconv.Quote(value)
		}
		paths = append(paths, pathOpt{text: p, pos: pp})
	}
	switch name {
	case "key":
		o.key, o.keySet = paths, true
	case "exclude":
		o.exclude = paths
	default:
		o.omit = paths
	}
	return ""
}

// setOrder sets order=ENTITY:TIME.
func (o *options) setOrder(value string, pos token.Position) string {
	entity, at, found := strings.Cut(value, ":")
	switch {
	case !found || strings.Contains(at, ":"):
		return "order: " + strconv.Quote(value) + " is not ENTITY:TIME (one entity path, a colon, one time path: order=req.UserID:req.Timestamp)"
	case entity == "":
		return "order: missing the entity path before ':' in " + strconv.Quote(value) + " (order=req.UserID:req.Timestamp)"
	case at == "":
		return "order: missing the time path after ':' in " + strconv.Quote(value) + " (order=req.UserID:req.Timestamp)"
	case strings.Contains(entity, ","):
		return "order: the entity is one path, not a list: " + strconv.Quote(entity) + " (key a struct or an idem.Keyer for a composite entity)"
	}
	tp := pos
	tp.Column += len(entity) + 1
	tp.Offset += len(entity) + 1
	o.orderEntity, o.orderTime, o.orderSet = pathOpt{text: entity, pos: pos}, pathOpt{text: at, pos: tp}, true
	return ""
}

type field struct {
	s   string
	off int
}

// fieldsWithOffsets splits s at spaces and tabs, keeping each field's byte offset.
func fieldsWithOffsets(s string) []field {
	var out []field
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' || s[i] == '\t' {
			if start >= 0 {
				out = append(out, field{s[start:i], start})
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return out
}
