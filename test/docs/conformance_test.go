package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goSource is every .go file of the repository, concatenated.
func goSource(t *testing.T, root string) string {
	t.Helper()
	var src strings.Builder
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			src.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return src.String()
}

// row is one row of a Markdown table: its first cell (what it is about)
// and its last (what checks it).
type row struct{ first, last string }

// tableRows returns the rows of doc's table whose header row starts with
// header, failing unless there are at least minRows.
func tableRows(t *testing.T, root, doc, header string, minRows int) []row {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	var rows []row
	inTable := false
	for _, line := range strings.Split(string(text), "\n") {
		switch {
		case strings.HasPrefix(line, header):
			inTable = true
		case !inTable || strings.HasPrefix(line, "|---"):
		case !strings.HasPrefix(line, "|"):
			inTable = false
		default:
			cells := strings.Split(line, "|")
			rows = append(rows, row{strings.TrimSpace(cells[1]), cells[len(cells)-2]})
		}
	}
	if len(rows) < minRows {
		t.Fatalf("read %d rows from the table %q of %s, want at least %d", len(rows), header, doc, minRows)
	}
	return rows
}

// checkTableTests reads the table of doc whose header row starts with
// header: its last column must name at least one Go test (`TestX` or
// `TestX/sub case`), and each test it names must exist.
func checkTableTests(t *testing.T, root, doc, header string, minRows int, src string) {
	t.Helper()
	name := regexp.MustCompile("`(Test[A-Za-z0-9_]+)(/[^`]*)?`")
	for _, r := range tableRows(t, root, doc, header, minRows) {
		found := 0
		for _, m := range name.FindAllStringSubmatch(r.last, -1) {
			if !strings.Contains(src, "func "+m[1]+"(") {
				t.Errorf("%s names %s, which no test defines", doc, m[1])
			}
			found++
		}
		if found == 0 {
			t.Errorf("%s: a row names no test: %s", doc, r.first)
		}
	}
}

// Every row of docs/HTTP.md's conformance table (the MUSTs and SHOULDs of
// the Idempotency-Key draft and RFC 9457) and of docs/GRPC.md's semantics
// table names the tests that check it, and those tests exist.
func TestConformanceRowsNameTheirTests(t *testing.T) {
	root := filepath.Join("..", "..")
	src := goSource(t, root)
	checkTableTests(t, root, filepath.Join("docs", "HTTP.md"), "| requirement |", 20, src)
	checkTableTests(t, root, filepath.Join("docs", "GRPC.md"), "| situation |", 10, src)
}
