// Package layout checks the repository's module layout: the root module
// stays light for a user who imports only the core, and go.work (which
// make test, make lint and .ci/run read) names every module.
package layout

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/internal/testenv"
)

// maxCoreModules is the most modules other than their own that a user's
// module importing only runtime/idem may list in go list -m all. The
// root module's own requirements (generator, tests) are all it adds.
const maxCoreModules = 8

// heavy are module path prefixes that belong in nested modules only.
var heavy = []string{
	"github.com/redis/", "github.com/jackc/", "github.com/aws/", "github.com/rabbitmq/",
	"go.opentelemetry.io/", "github.com/prometheus/", "github.com/nats-io/",
	"cloud.google.com/", "google.golang.org/grpc", "github.com/twmb/",
}

// goCmd runs go in dir outside any workspace, as a user's build runs.
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// TestCoreModuleWeight builds a user's module that imports only
// runtime/idem, memstore and idemhttp (middleware and Transport; through a replace of this checkout, as an unreleased
// version is used) and counts the modules it selects.
func TestCoreModuleWeight(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module (-short)")
	}
	mod := t.TempDir()
	if err := testenv.ScratchModule(mod, "example.com/user"); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"main.go": `package main

import (
	"net/http"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemhttp"
	"github.com/idemgen/idemgen/runtime/memstore"
)

func main() {
	_, _ = idemhttp.New(idem.NewGuard(memstore.New()), idemhttp.WithoutPrincipal())
	_ = &http.Client{Transport: &idemhttp.Transport{}} // the HTTP client side stays in the core
}
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goCmd(t, mod, "mod", "tidy")
	goCmd(t, mod, "build", "./...")
	var others []string
	for _, line := range strings.Split(strings.TrimSpace(goCmd(t, mod, "list", "-m", "all")), "\n") {
		if path, _, _ := strings.Cut(line, " "); path != "example.com/user" {
			others = append(others, line)
		}
	}
	t.Logf("go list -m all of a module importing runtime/idem lists %d other modules:\n%s", len(others), strings.Join(others, "\n"))
	if len(others) > maxCoreModules {
		t.Errorf("%d other modules, want at most %d", len(others), maxCoreModules)
	}
	for _, m := range others {
		for _, h := range heavy {
			if strings.HasPrefix(m, h) {
				t.Errorf("%s reaches a user of runtime/idem: it belongs in a nested module", m)
			}
		}
	}
}

// TestWorkspaceListsEveryModule: go.work is the list of modules that
// make test and make lint loop over, so a module missing from it would
// go untested.
func TestWorkspaceListsEveryModule(t *testing.T) {
	root := testenv.Root()
	var found []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "golden" || name == "node_modules") {
			return filepath.SkipDir // golden/ is a module only to hide expected output from builds
		}
		if !d.IsDir() && name == "go.mod" {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "work", "edit", "-json")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(root, "go.work")) // make runs tests with GOWORK=off
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go work edit -json: %v", err)
	}
	var used []string
	for _, line := range strings.Split(string(out), "\n") {
		if dir, ok := strings.CutPrefix(strings.TrimSpace(line), `"DiskPath": "`); ok {
			used = append(used, strings.TrimPrefix(strings.TrimSuffix(strings.TrimSuffix(dir, ","), `"`), "./"))
		}
	}
	slices.Sort(found)
	slices.Sort(used)
	if diff := cmp.Diff(found, used); diff != "" {
		t.Errorf("go.work use (+) differs from the go.mod files in the tree (-):\n%s", diff)
	}
}
