// Package docs checks what the documentation claims about the code.
package docs

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every row of docs/SECURITY.md's threat table names at least one test,
// and every test it names exists: a Go test or fuzz function, a
// runtime/idemtest conformance case, or a reliability scenario.
func TestSecurityRowsNameTheirTests(t *testing.T) {
	root := filepath.Join("..", "..")
	src := goSource(t, root)
	name := regexp.MustCompile("`([A-Za-z0-9_/*]+)`")
	conformanceCase := regexp.MustCompile(`^[A-Z][A-Za-z]+$`)
	for _, r := range tableRows(t, root, filepath.Join("docs", "SECURITY.md"), "| threat |", 10) {
		found := 0
		for _, m := range name.FindAllStringSubmatch(r.last, -1) {
			n := m[1]
			switch {
			case strings.HasPrefix(n, "Test") || strings.HasPrefix(n, "Fuzz"):
				fn, _, _ := strings.Cut(n, "/")
				if !strings.Contains(src, "func "+fn+"(") {
					t.Errorf("docs/SECURITY.md names %s, which no test defines", n)
				}
				found++
			case conformanceCase.MatchString(n) && strings.Contains(src, `{"`+n+`",`):
				found++ // a conformance case of runtime/idemtest
			}
		}
		if found == 0 {
			t.Errorf("a threat row names no test: %s", r.first)
		}
	}
}
