package generator

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/idemgen/idemgen/internal/testenv"
)

// diagnosticsOf are the diagnostics of err, which must be an *Error.
func diagnosticsOf(t *testing.T, err error) []string {
	t.Helper()
	var gerr *Error
	if !errors.As(err, &gerr) {
		t.Fatalf("Generate: %v, want diagnostics", err)
	}
	var got []string
	for _, d := range gerr.Diagnostics {
		got = append(got, d.String())
	}
	return got
}

// newScratch makes a module of the given path, requiring also
// (testenv.ScratchModule), in a temporary directory, and returns it.
func newScratch(tb testing.TB, path string, also ...string) string {
	tb.Helper()
	mod := tb.TempDir()
	if err := testenv.ScratchModule(mod, path, also...); err != nil {
		tb.Fatal(err)
	}
	return mod
}

// slowRoot skips a test that does what under -short, and otherwise returns
// the repository's root, which holds testdata/ and golden/.
func slowRoot(t *testing.T, what string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: " + what)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}
