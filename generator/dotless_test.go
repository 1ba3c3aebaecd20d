package generator

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/internal/testenv"
)

// dotlessModule is the module path TestDotlessModule runs the corpus
// under: no dot, as `go mod init gizmo` names a module, so its paths are
// spelt like the standard library's. It sorts where github.com/… does
// among the standard library's paths and golang.org/…, so the generated
// files, which order some checks by package path, compare line for line.
const dotlessModule = "gizmo"

// TestDotlessModule generates every case in a module whose path has no
// dot and checks that it makes of each what the golden says, but for the
// import path (and the signatures, which digest the default names): the
// module's own types are pinned against drift and its own interfaces are
// unions, as in any module. Every output case then builds and passes its
// behaviour tests there, as TestBehaviour runs them under a dotted path.
func TestDotlessModule(t *testing.T) {
	root := slowRoot(t, "generates, builds and runs every golden case in a scratch module")
	mod := newScratch(t, dotlessModule, "github.com/google/go-cmp v0.7.0", "runtime/redisstore")
	from, to := "github.com/idemgen/idemgen/testdata/", dotlessModule+"/testdata/"
	err := filepath.WalkDir(filepath.Join(root, "testdata"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.Name() == goldenOutput && strings.Count(filepath.ToSlash(rel), "/") == 2 {
			return nil // a stray generated file in a case: the run makes its own
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		write(t, filepath.Join(mod, rel), []byte(strings.ReplaceAll(string(data), from, to)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	results, names := runCasesIn(t, mod, testenv.OfflineGoEnv())
	sig := regexp.MustCompile(`(Signature:\s+)"[0-9a-f]{16}"`)
	importBlock := regexp.MustCompile(`(?s)\nimport \(\n.*?\n\)\n`)
	normal := func(s string) string {
		s = sig.ReplaceAllString(strings.ReplaceAll(s, from, to), `$1"…"`)
		// goimports groups a dotless path with the standard library's
		// (its own guess from the spelling, harmless in a file's layout):
		// the imports compare as a set.
		return importBlock.ReplaceAllStringFunc(s, func(block string) string {
			lines := strings.Fields(strings.ReplaceAll(block, "\t", " "))
			slices.Sort(lines)
			return strings.Join(lines, " ")
		})
	}
	var tests []string
	for _, name := range names {
		r := results[name]
		kind, err := declaredKind(name, filepath.Join(root, "golden", name))
		if err != nil {
			t.Fatal(err)
		}
		file, got := goldenOutput, string(r.output)
		if kind == kindDiags || len(r.diags) > 0 {
			got = strings.Join(r.diags, "\n") + "\n"
		}
		if kind == kindDiags {
			file = goldenDiags
		}
		golden, err := os.ReadFile(filepath.Join(root, "golden", name, file))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if diff := cmp.Diff(normal(string(golden)), normal(got)); diff != "" {
			t.Errorf("%s: under module %s, %s differs from golden/%s/%s but for the import path (-golden +got):\n%s",
				name, dotlessModule, file, name, file, diff)
			continue
		}
		if kind == kindDiags {
			continue
		}
		dst := filepath.Join(mod, "testdata", name)
		write(t, filepath.Join(dst, goldenOutput), r.output)
		m := regexp.MustCompile(`(?m)^package (\w+)$`).FindSubmatch(r.output)
		if m == nil {
			t.Fatalf("%s: no package clause", name)
		}
		write(t, filepath.Join(dst, "zz_helpers_test.go"), []byte(strings.Replace(helpersSource, "package PKG", "package "+string(m[1]), 1)))
		tests = append(tests, "./testdata/"+name)
	}
	if t.Failed() {
		return
	}
	cmd := exec.Command("go", append([]string{"test", "-count=1"}, tests...)...)
	cmd.Dir, cmd.Env = mod, testenv.OfflineGoEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test in module %s: %v\n%s", dotlessModule, err, out)
	}
	if len(tests) == 0 {
		t.Error("no output case was built")
	}
	t.Logf("%d cases generated as golden says, %d built and passed their behaviour tests under module %s", len(names), len(tests), dotlessModule)
}
