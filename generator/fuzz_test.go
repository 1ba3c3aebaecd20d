package generator

import (
	"fmt"
	"go/ast"
	"go/token"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// FuzzParseDirectives feeds arbitrary directive text to the //idem: parser.
// Each line of the input becomes one "//idem:" comment line of a doc
// comment. Properties: the parser never panics; it reports failure exactly
// when it records a diagnostic; every diagnostic points into the directive
// it complains about; parsing is deterministic; and an accepted directive,
// written back as name=value pairs, parses to the same options.
//
// Seed corpus: testdata/fuzz/FuzzParseDirectives. Run with
//
//	go test -run '^$' -fuzz '^FuzzParseDirectives$' -fuzztime 5m -parallel 1 ./generator
func FuzzParseDirectives(f *testing.F) {
	for _, s := range []string{
		"ttl=24h lease=30s on_duplicate=wait key=req.CustomerID,req.OrderID",
		"ttl=300",
		"on_failure=lock\nname=billing.charge version=2",
		"key=a,,b",
		"tll=1h",
		"ttl=1h ttl=2h",
		"lease=5",
		"wait=1s",
		"on_duplicate=wait wait=10s",
		"exclude=meta.DeliveryID\tname=x/y-z",
		"version=-1 name=:bad",
		"ttl=9223372036854775807",
		"=",
		"key=",
		"  \t ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		lines := strings.Split(text, "\n")
		if len(lines) > 16 {
			lines = lines[:16]
		}
		hang := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("parseDirectives still running after 10s on %q", text)) })
		defer hang.Stop()
		o1, ok1, d1 := parseFuzzDirective(lines)
		o2, ok2, d2 := parseFuzzDirective(lines)
		if ok1 != ok2 || !cmp.Equal(d1, d2) || !cmp.Equal(o1.order, o2.order) {
			t.Fatalf("parse is not deterministic: %v/%v %v/%v", ok1, ok2, d1, d2)
		}
		if ok1 != (len(d1) == 0) {
			t.Fatalf("ok=%v but %d diagnostics: %v", ok1, len(d1), d1)
		}
		for _, d := range d1 {
			if d.Msg == "" {
				t.Fatalf("empty diagnostic at %v", d.Pos)
			}
			if d.Pos.Line < 1 || d.Pos.Line > len(lines) || d.Pos.Column < 1 ||
				d.Pos.Column > len(directivePrefix)+len(lines[d.Pos.Line-1])+1 {
				t.Fatalf("diagnostic %q at %d:%d is outside the directive (%d lines)", d.Msg, d.Pos.Line, d.Pos.Column, len(lines))
			}
		}
		if !ok1 {
			return
		}
		// Accepted: every option was given once with a non-empty value, and
		// writing them back on one line parses to the same options.
		var parts []string
		for _, name := range o1.order {
			g := o1.given[name]
			if g.value == "" || strings.ContainsAny(g.value, " \t") {
				t.Fatalf("accepted option %s with value %q", name, g.value)
			}
			parts = append(parts, name+"="+g.value)
		}
		o3, ok3, d3 := parseFuzzDirective([]string{strings.Join(parts, " ")})
		if !ok3 {
			t.Fatalf("re-rendered directive %q rejected: %v", strings.Join(parts, " "), d3)
		}
		opt := cmp.Options{
			cmp.AllowUnexported(options{}, option{}, pathOpt{}),
			// Positions differ (one line instead of several): compare values only.
			cmp.Comparer(func(a, b token.Position) bool { return true }),
		}
		if diff := cmp.Diff(o1, o3, opt); diff != "" {
			t.Fatalf("re-rendered directive parses differently (-first +second):\n%s", diff)
		}
	})
}

// parseFuzzDirective builds the comment lines of a doc comment, one per
// line of text, in a file of their own, and parses them.
func parseFuzzDirective(lines []string) (options, bool, []Diagnostic) {
	var src strings.Builder
	for _, l := range lines {
		src.WriteString(directivePrefix + l + "\n")
	}
	fset := token.NewFileSet()
	file := fset.AddFile("fuzz.go", -1, src.Len())
	file.SetLinesForContent([]byte(src.String()))
	comments := make([]*ast.Comment, len(lines))
	off := 0
	for i, l := range lines {
		comments[i] = &ast.Comment{Slash: file.Pos(off), Text: directivePrefix + l}
		off += len(directivePrefix) + len(l) + 1
	}
	d := &diags{}
	o, ok := parseDirectives(fset, comments, d)
	return o, ok, d.list
}
