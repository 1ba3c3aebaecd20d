package generator

import (
	"fmt"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
)

// Diagnostic is one problem found at generate time, at a source position.
type Diagnostic struct {
	Pos token.Position
	Msg string
}

// String formats d as file:line:col: message, or the message alone without a position.
func (d Diagnostic) String() string {
	if !d.Pos.IsValid() {
		return d.Msg
	}
	return fmt.Sprintf("%s:%d:%d: %s", d.Pos.Filename, d.Pos.Line, d.Pos.Column, d.Msg)
}

// Error is returned by Generate when a package cannot be generated. It
// carries every diagnostic of every package, sorted by position, so one run
// reports all of them.
type Error struct {
	Diagnostics []Diagnostic
}

// Error lists every diagnostic, one a line.
func (e *Error) Error() string {
	lines := make([]string, len(e.Diagnostics))
	for i, d := range e.Diagnostics {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// diags collects diagnostics; positions are made relative to base so
// messages (and golden files) carry no absolute paths.
type diags struct {
	base string
	list []Diagnostic
	// at are the positions of list as given (absolute file names).
	at []token.Position
}

func (d *diags) add(pos token.Position, format string, args ...any) {
	d.at = append(d.at, pos)
	if pos.Filename != "" && d.base != "" {
		if rel, err := filepath.Rel(d.base, pos.Filename); err == nil && !strings.HasPrefix(rel, "..") {
			pos.Filename = filepath.ToSlash(rel)
		}
	}
	d.list = append(d.list, Diagnostic{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (d *diags) err() error {
	if len(d.list) == 0 {
		return nil
	}
	l := append([]Diagnostic(nil), d.list...)
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i].Pos, l[j].Pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return l[i].Msg < l[j].Msg
	})
	// The same problem reached twice (a type used by two paths) is reported once.
	out := l[:0]
	for i, x := range l {
		if i > 0 && x == l[i-1] {
			continue
		}
		out = append(out, x)
	}
	return &Error{Diagnostics: out}
}

// didYouMean returns ` (did you mean "x"?)` when a candidate is close to s:
// at most two edits away, or s abbreviates it (ondup, dup → on_duplicate).
func didYouMean(s string, candidates []string) string {
	s = strings.ToLower(s)
	flat := strings.ReplaceAll(s, "_", "")
	best, bestD := "", 1<<30
	for _, c := range candidates {
		d := editDistance(s, c)
		if len(flat) >= 3 && strings.Contains(strings.ReplaceAll(c, "_", ""), flat) {
			d = min(d, 2)
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	if bestD > 2 || bestD >= len(s) {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the optimal-string-alignment distance: insertions,
// deletions, substitutions and adjacent transpositions cost one each.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// addOnce appends s to list unless it is there.
func addOnce(list []string, s string) []string {
	for _, l := range list {
		if l == s {
			return list
		}
	}
	return append(list, s)
}
