// Package docs checks what the documentation claims about the code.
package docs

import (
	"os"
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
	doc, err := os.ReadFile(filepath.Join(root, "docs", "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	src := goSource(t, root)
	rows := 0
	inTable := false
	name := regexp.MustCompile("`([A-Za-z0-9_/*]+)`")
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "| threat |") {
			inTable = true
			continue
		}
		if !inTable || strings.HasPrefix(line, "|---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		cells := strings.Split(line, "|")
		checked := cells[len(cells)-2]
		rows++
		found := 0
		for _, m := range name.FindAllStringSubmatch(checked, -1) {
			n := m[1]
			switch {
			case strings.HasPrefix(n, "Test") || strings.HasPrefix(n, "Fuzz"):
				fn, _, _ := strings.Cut(n, "/")
				if !strings.Contains(src, "func "+fn+"(") {
					t.Errorf("docs/SECURITY.md names %s, which no test defines", n)
				}
				found++
			case regexp.MustCompile(`^[A-Z][A-Za-z]+$`).MatchString(n) && strings.Contains(src, `{"`+n+`",`):
				found++ // a conformance case of runtime/idemtest
			}
		}
		if found == 0 {
			t.Errorf("a threat row names no test: %s", strings.TrimSpace(cells[1]))
		}
	}
	if rows < 10 {
		t.Fatalf("read %d threat rows from docs/SECURITY.md, want the table", rows)
	}
}
