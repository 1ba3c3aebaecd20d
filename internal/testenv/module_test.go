package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestScratchModule: the go.mod a scratch module gets, with the root
// module alone, with another module of the repository, and with a module
// at a version; go.sum holds the repository modules' go.sum files.
func TestScratchModule(t *testing.T) {
	root := Root()
	rootSum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	redisSum, err := os.ReadFile(filepath.Join(root, "runtime", "redisstore", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	goLine, err := goVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		also    []string
		wantMod string
		wantSum string
	}{
		{"root module", nil, "module example.com/m\n\n" + goLine + "\n\nrequire (\n\tgithub.com/idemgen/idemgen v0.0.0-00010101000000-000000000000\n)\n\nreplace github.com/idemgen/idemgen => " + root + "\n", string(rootSum)},
		{"a module of the repository and one at a version", []string{"github.com/google/go-cmp v0.7.0", "runtime/redisstore"},
			"module example.com/m\n\n" + goLine + "\n\nrequire (\n\tgithub.com/idemgen/idemgen v0.0.0-00010101000000-000000000000\n\tgithub.com/google/go-cmp v0.7.0\n\tgithub.com/idemgen/idemgen/runtime/redisstore v0.0.0-00010101000000-000000000000\n)\n\nreplace github.com/idemgen/idemgen => " + root +
				"\n\nreplace github.com/idemgen/idemgen/runtime/redisstore => " + filepath.Join(root, "runtime", "redisstore") + "\n",
			string(rootSum) + string(redisSum)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := ScratchModule(dir, "example.com/m", tt.also...); err != nil {
				t.Fatal(err)
			}
			mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantMod, string(mod)); diff != "" {
				t.Errorf("go.mod (-want +got):\n%s", diff)
			}
			sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
			if err != nil {
				t.Fatal(err)
			}
			if string(sum) != tt.wantSum {
				t.Errorf("go.sum: %d bytes, want the %d of the modules' go.sum files", len(sum), len(tt.wantSum))
			}
		})
	}
}
