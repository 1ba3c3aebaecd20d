package keyprop

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/generator"
	"github.com/idemgen/idemgen/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite sample/types.go and sample/cases_test.go")

// Types per package: the sample's, and each random package's.
const perPackage = 12

// TestSampleCurrent: the committed sample package (which the fuzz target
// runs on) is what Generate writes for its seed.
func TestSampleCurrent(t *testing.T) {
	p := Generate("sample", 1, perPackage)
	for name, want := range map[string][]byte{"types.go": p.Types, "cases_test.go": p.Cases} {
		path := filepath.Join("sample", name)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go test ./internal/keyprop -run TestSampleCurrent -update, then make generate", path)
		}
	}
}

// TestRandomTypes generates packages of random types (the seeds of
// Seeds, IDEM_KEYPROP_SEEDS random ones, or the list in IDEM_KEYPROP_SEED), runs idemgen on them in a
// scratch module, and runs their property tests: keys injective under
// the key equality, replays faithful.
func TestRandomTypes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds scratch packages")
	}
	seeds := Seeds()
	if list := os.Getenv("IDEM_KEYPROP_SEED"); list != "" {
		seeds = nil // reproduce: IDEM_KEYPROP_SEED=s1,s2
		for _, f := range strings.Split(list, ",") {
			s, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			seeds = append(seeds, s)
		}
	} else if n, _ := strconv.Atoi(os.Getenv("IDEM_KEYPROP_SEEDS")); n > 0 {
		seeds = nil
		base := uint64(time.Now().UnixNano())
		for i := range n {
			seeds = append(seeds, base+uint64(i))
		}
	}
	// In this module, and in one whose path has no dot (go mod init
	// myapp): its paths are spelt like the standard library's, and its
	// types must be keyed, pinned and stored as any module's.
	// Both pin the same types against drift.
	pins := map[string]map[string][]string{}
	for _, tc := range []struct{ name, module string }{{"repo", ""}, {"dotless", "myapp"}} {
		t.Run(tc.name, func(t *testing.T) { pins[tc.name] = randomTypes(t, tc.module, seeds) })
	}
	n := 0
	for _, p := range pins["repo"] {
		n += len(p)
	}
	if n == 0 && !t.Failed() {
		t.Error("no drift pin found in the generated files: pinLine is out of date")
	}
	if diff := cmp.Diff(pins["repo"], pins["dotless"]); diff != "" && !t.Failed() {
		t.Errorf("the types pinned against drift, by package (-in this module +in module myapp):\n%s", diff)
	}
}

// pinLine matches a drift pin of the generated code: a named type's
// conversion to its underlying type, or an alias's assignment.
var pinLine = regexp.MustCompile(`(?m)^\t_ (?:= \(\*[^)]+\)\(new\([^)]+\)\)|\*\S+\s+= new\([^)]+\))$`)

// keypropPath is the import path the packages of random types import
// check and other under, in this module.
const keypropPath = "github.com/idemgen/idemgen/internal/keyprop/"

// randomTypes generates the packages of seeds and runs their property
// tests: in this module if module is "", else in a scratch module of
// that path, with copies of check and other. It returns the drift pins of
// each package's generated file.
func randomTypes(t *testing.T, module string, seeds []uint64) map[string][]string {
	dir, env, from, to := ".", []string(nil), keypropPath, keypropPath
	var pkgs []string
	if module == "" {
		// The packages live in this module (under testdata, which ./...
		// patterns skip) so they may import internal/keyprop/check and other.
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		run, err := os.MkdirTemp("testdata", "run-")
		if err != nil {
			t.Fatal(err)
		}
		if os.Getenv("IDEM_KEYPROP_KEEP") == "" {
			t.Cleanup(func() { os.RemoveAll(run) })
		}
		for _, s := range seeds {
			pkgs = append(pkgs, "./"+filepath.ToSlash(filepath.Join(run, fmt.Sprintf("p%d", s))))
		}
	} else {
		dir, env, to = t.TempDir(), testenv.OfflineGoEnv(), module+"/keyprop/"
		if err := testenv.ScratchModule(dir, module, "github.com/google/go-cmp v0.7.0"); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"check/check.go", "other/other.go"} {
			data, err := os.ReadFile(filepath.FromSlash(f))
			if err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "keyprop", filepath.FromSlash(f)), bytes.ReplaceAll(data, []byte(from), []byte(to)))
		}
		for _, s := range seeds {
			pkgs = append(pkgs, fmt.Sprintf("./p%d", s))
		}
	}
	for i, s := range seeds {
		pkg := fmt.Sprintf("p%d", s)
		p := Generate(pkg, s, perPackage)
		for name, data := range map[string][]byte{"types.go": p.Types, "cases_test.go": p.Cases} {
			write(t, filepath.Join(dir, filepath.FromSlash(pkgs[i]), name), bytes.ReplaceAll(data, []byte(from), []byte(to)))
		}
	}
	files, err := generator.Generate(generator.Config{Dir: dir, Patterns: pkgs, Env: env})
	if err != nil {
		t.Fatalf("idemgen refused random types it must accept (seeds %v): %v", seeds, err)
	}
	pins := map[string][]string{}
	for _, f := range files {
		write(t, f.Path, f.Content)
		pins[filepath.Base(filepath.Dir(f.Path))] = pinLine.FindAllString(string(f.Content), -1)
	}
	for _, args := range [][]string{{"vet"}, {"test", "-count=1", "-v", "-run", "TestKeyProperty"}} {
		args = append(args, pkgs...)
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s (seeds %v; keep the scratch module with IDEM_KEYPROP_KEEP): %v\n%s", strings.Join(args, " "), seeds, err, out)
		}
		if args[0] == "test" {
			var total [4]int
			re := regexp.MustCompile(`keyprop: (\d+) types, (\d+) values, (\d+) key pairs, (\d+) replays`)
			for _, m := range re.FindAllStringSubmatch(string(out), -1) {
				for i := range total {
					n, _ := strconv.Atoi(m[i+1])
					total[i] += n
				}
			}
			t.Logf("seeds %v: %d types, %d values, %d key pairs, %d replays checked", seeds, total[0], total[1], total[2], total[3])
		}
	}
	return pins
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
