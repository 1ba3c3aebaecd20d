package generator

import (
	"go/token"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// collectUnaccounted runs f with accountHook recording every directive
// line left without an outcome.
func collectUnaccounted(f func()) []token.Position {
	var mu sync.Mutex
	var left []token.Position
	accountHook = func(_ string, u []token.Position) {
		mu.Lock()
		defer mu.Unlock()
		left = append(left, u...)
	}
	defer func() { accountHook = nil }()
	f()
	return left
}

// TestEveryAnnotationAccounted: over the golden and diagnostics corpora,
// every //idem: line ends in a wrapper or in a diagnostic about it, even in
// packages where another function's diagnostic leaves the file out.
func TestEveryAnnotationAccounted(t *testing.T) {
	left := collectUnaccounted(func() { runCases(t) })
	for _, p := range left {
		t.Errorf("%s: //idem: line with neither a wrapper nor a diagnostic", p)
	}
}

// A wrapper dropped without a diagnostic is reported as a defect at its
// directive; the rest of the package is generated.
func TestSilentSkipReported(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dropWrapper = func(x *fn) bool { return x.name == "Stream" }
	defer func() { dropWrapper = nil }()
	var left []token.Position
	var files []File
	left = collectUnaccounted(func() {
		files, err = Generate(Config{Dir: root, Patterns: []string{"./testdata/keyhelperfailed"}})
	})
	got := diagnosticsOf(t, err)
	want := []string{"testdata/keyhelperfailed/keyhelperfailed.go:27:1: //idem: annotates something that was neither wrapped nor refused: an idemgen defect; please report it"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
	// As for a function the pre-write check refuses, the rest is generated.
	if len(left) != 1 || len(files) != 1 || strings.Contains(string(files[0].Content), ") Stream(") {
		t.Errorf("unaccounted %v, %d files: want the one line, and the file without Stream", left, len(files))
	}
}
