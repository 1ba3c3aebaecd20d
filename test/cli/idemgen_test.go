// Package cli runs the idemgen command end to end: testscript scripts in
// testdata drive the built binary against scratch modules. It lives in
// the test module so that testscript (and what it requires) stays out of
// the root module's requirements, which every user of the core inherits.
package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/idemgen/idemgen/internal/testenv"
)

// TestScripts runs the idemgen binary, built from this checkout, against
// scratch modules that use this repository's runtime: each script's work
// directory gets a go.mod (module example.com/m) that replaces
// github.com/idemgen/idemgen with this checkout.
func TestScripts(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the go command")
	}
	root := testenv.Root()
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(os.PathSeparator), "./cmd/idemgen", "./cmd/idemvet")
	build.Dir = root // in the root module, with its own go.sum
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build idemgen idemvet: %v\n%s", err, out)
	}
	goEnv := map[string]string{}
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOROOT"} {
		goEnv[k] = strings.Split(strings.TrimSpace(string(out)), "\n")[i]
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(env *testscript.Env) error {
			for k, v := range goEnv {
				env.Setenv(k, v)
			}
			env.Setenv("REPO", root)
			env.Setenv("IDEMVET", filepath.Join(bin, "idemvet")) // go vet -vettool wants a path
			env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("GOFLAGS", "-mod=mod")
			env.Setenv("GOPROXY", "off")
			env.Setenv("GOWORK", "off")
			env.Setenv("GOTOOLCHAIN", "local")
			return testenv.ScratchModule(env.WorkDir, "example.com/m")
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// exitcode N cmd args...: run cmd and require exit status N.
			"exitcode": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) < 2 {
					ts.Fatalf("usage: exitcode N cmd args...")
				}
				want, err := strconv.Atoi(args[0])
				ts.Check(err)
				err = ts.Exec(args[1], args[2:]...)
				got := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					got = ee.ExitCode()
				} else if err != nil {
					ts.Fatalf("%v", err)
				}
				if got != want {
					ts.Fatalf("exit status %d, want %d", got, want)
				}
			},
			// age-file file: set its modification time to long ago.
			"age-file": func(ts *testscript.TestScript, neg bool, args []string) {
				old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
				ts.Check(os.Chtimes(ts.MkAbs(args[0]), old, old))
			},
			// is-old file: the file was not rewritten since age-file.
			"is-old": func(ts *testscript.TestScript, neg bool, args []string) {
				fi, err := os.Stat(ts.MkAbs(args[0]))
				ts.Check(err)
				old := fi.ModTime().Year() == 2001
				if old == neg {
					ts.Fatalf("%s modified at %v", args[0], fi.ModTime())
				}
			},
		},
	})
}
