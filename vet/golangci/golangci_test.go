package golangci

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/vet/idemvet"
)

// The settings of .golangci.yml become idemvet's flags; an unknown
// setting is an error, not silently ignored.
func TestNew(t *testing.T) {
	defer func() {
		idemvet.Analyzer.Flags.Set("testfiles", "true")
		idemvet.Analyzer.Flags.Set("output", "idem_gen.go")
	}()
	p, err := New(map[string]any{"testfiles": false, "output": "wrappers_gen.go"})
	if err != nil {
		t.Fatal(err)
	}
	as, err := p.BuildAnalyzers()
	if err != nil || len(as) != 1 || as[0] != idemvet.Analyzer {
		t.Fatalf("BuildAnalyzers = %v, %v; want idemvet.Analyzer", as, err)
	}
	got := map[string]string{}
	for _, name := range []string{"testfiles", "output"} {
		got[name] = idemvet.Analyzer.Flags.Lookup(name).Value.String()
	}
	if diff := cmp.Diff(map[string]string{"testfiles": "false", "output": "wrappers_gen.go"}, got); diff != "" {
		t.Errorf("flags (-want +got):\n%s", diff)
	}
	if _, err := New(map[string]any{"testfile": true}); err == nil {
		t.Error("New accepted an unknown setting (testfile)")
	}
}

// TestCustomGolangciLint runs a golangci-lint built with this plugin (see
// docs/GENERATOR.md: building it takes minutes, so it is not part of make
// test) on a scratch module with a direct call, a stale idem_gen.go and a
// wrapper given context.Background(). IDEM_GOLANGCI_LINT is the binary;
// IDEMGEN is an idemgen binary to generate with.
func TestCustomGolangciLint(t *testing.T) {
	bin, idemgen := os.Getenv("IDEM_GOLANGCI_LINT"), os.Getenv("IDEMGEN")
	if bin == "" || idemgen == "" {
		t.Skip("IDEM_GOLANGCI_LINT (a golangci-lint built with this plugin) and IDEMGEN (an idemgen binary) not set: see docs/GENERATOR.md")
	}
	mod := t.TempDir()
	if err := testenv.ScratchModule(mod, "example.com/m"); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		".golangci.yml": `version: "2"
linters:
  default: none
  enable: [idemvet]
  settings:
    custom:
      idemvet:
        type: module
        description: calls that bypass idemgen wrappers, stale idem_gen.go
`,
		"billing/billing.go": "package billing\n\nimport \"context\"\n\n//idem:ttl=1h key=id\nfunc Charge(ctx context.Context, id string) error { return nil }\n",
		"app/app.go": `package app

import (
	"context"

	"example.com/m/billing"
)

func Pay(ctx context.Context, w *billing.Idempotent) error {
	if err := billing.Charge(ctx, "a"); err != nil {
		return err
	}
	return w.Charge(context.Background(), "b")
}
`,
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(mod, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := testenv.OfflineGoEnv()
	run := func(ok bool, name string, args ...string) string {
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = mod, env
		out, err := cmd.CombinedOutput()
		if (err == nil) != ok {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(true, idemgen, "./...")
	// The annotation changes after generating: idem_gen.go is stale.
	stale := strings.Replace(files["billing/billing.go"], "ttl=1h", "ttl=2h", 1)
	if err := os.WriteFile(filepath.Join(mod, "billing/billing.go"), []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	out := run(false, bin, "run", "--output.text.path=stdout", "--output.text.colors=false", "--show-stats=false", "./...")
	var got []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasSuffix(line, "(idemvet)") {
			got = append(got, line)
		}
	}
	want := []string{
		"app/app.go:10:20: a direct call of billing.Charge bypasses its idempotent wrapper (Idempotent.Charge); call the wrapper, or mark a deliberate bypass with //idem:direct <reason> (idemvet)",
		"app/app.go:13:18: wrapper Charge called with context.Background() although ctx (a context.Context) is in scope: the call would not stop when its caller is cancelled (idemvet)",
		"billing/billing.go:5:1: idem_gen.go is stale: it differs from what idemgen writes for these annotations now (run go generate) (idemvet)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("golangci-lint diagnostics (-want +got):\n%s\nfull output:\n%s", diff, out)
	}
}
