package generator

import (
	"go/token"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/go/packages"
)

func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"tll", ` (did you mean "ttl"?)`},
		{"TTL", ` (did you mean "ttl"?)`},
		{"leese", ` (did you mean "lease"?)`},
		{"onduplicate", ` (did you mean "on_duplicate"?)`},
		{"dup", ` (did you mean "on_duplicate"?)`},
		{"on_failre", ` (did you mean "on_failure"?)`},
		{"exlcude", ` (did you mean "exclude"?)`},
		{"keys", ` (did you mean "key"?)`},
		{"versoin", ` (did you mean "version"?)`},
		{"frobnicate", ""},
		{"x", ""},
	} {
		if got := didYouMean(tc.in, optionNames); got != tc.want {
			t.Errorf("didYouMean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"ttl", "ttl", 0}, {"tll", "ttl", 1}, {"tlt", "ttl", 1},
		{"lease", "", 5}, {"wiat", "wait", 1}, {"kitten", "sitting", 3},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestErrPos(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want token.Position
	}{
		{"/a/b.go:10:5", token.Position{Filename: "/a/b.go", Line: 10, Column: 5}},
		{"/a/b.go:10", token.Position{Filename: "/a/b.go", Line: 10, Column: 1}},
		{"-", token.Position{}},
		{"", token.Position{}},
	} {
		if got := errPos(packages.Error{Pos: tc.in}); got != tc.want {
			t.Errorf("errPos(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// Diagnostics come back sorted by file, line and column, without duplicates.
func TestDiagsSorted(t *testing.T) {
	d := &diags{base: "/m"}
	d.add(token.Position{Filename: "/m/b.go", Line: 1, Column: 1}, "b1")
	d.add(token.Position{Filename: "/m/a.go", Line: 9, Column: 2}, "a9")
	d.add(token.Position{Filename: "/m/a.go", Line: 2, Column: 7}, "a2")
	d.add(token.Position{Filename: "/m/a.go", Line: 2, Column: 7}, "a2")
	err := d.err().(*Error)
	var got []string
	for _, x := range err.Diagnostics {
		got = append(got, x.String())
	}
	want := []string{"a.go:2:7: a2", "a.go:9:2: a9", "b.go:1:1: b1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}

func TestConfigOutput(t *testing.T) {
	for _, out := range []string{"sub/x.go", "x.txt", "x_test.go"} {
		if _, err := Generate(Config{Output: out}); err == nil {
			t.Errorf("Output %q accepted", out)
		}
	}
}
