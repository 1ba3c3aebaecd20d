package pgstore

import (
	"os"
	"strings"
	"testing"
)

// TestDocsSchemaCurrent keeps docs/POSTGRES.md's schema listing equal to
// what MigrationSQL renders.
func TestDocsSchemaCurrent(t *testing.T) {
	doc, err := os.ReadFile("../../docs/POSTGRES.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), MigrationSQL()) {
		t.Errorf("docs/POSTGRES.md does not contain the current pgstore.MigrationSQL() output; update its schema section:\n%s", MigrationSQL())
	}
}
