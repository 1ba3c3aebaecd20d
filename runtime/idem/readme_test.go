package idem_test

import (
	"os"
	"strings"
	"testing"
)

// The README once promised "at most once per key" without its limit. Its
// first screen must state the guarantee with the lease and the fence that
// closes the takeover gap, and link the exact statement in docs/RUNTIME.md.
func TestReadmeStatesTheGuaranteeExactly(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(readme), "\n")
	first := strings.Join(lines[:min(len(lines), 30)], "\n")
	for _, want := range []string{"while its owner holds the lease", "takes the key over", "idem.FenceFrom(ctx)", "docs/RUNTIME.md#the-guarantee-exactly"} {
		if !strings.Contains(first, want) {
			t.Errorf("README's first screen does not say %q", want)
		}
	}
	if strings.Contains(first, "run at most once per key, and") {
		t.Error("README's first screen still promises at most once per key without the lease limit")
	}
	runtimeDoc, err := os.ReadFile("../../docs/RUNTIME.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(runtimeDoc), "## The guarantee, exactly") {
		t.Error("docs/RUNTIME.md has no section \"The guarantee, exactly\"")
	}
}
