package generator

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// varDirectiveLines maps each var _ = X of a file to its //idem: options.
func varDirectiveLines(t *testing.T, file string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		target, ok := strings.CutPrefix(l, "var _ = ")
		if !ok {
			continue
		}
		var opts []string
		for j := i - 1; j >= 0 && strings.HasPrefix(lines[j], "//"); j-- {
			if o, ok := strings.CutPrefix(lines[j], directivePrefix); ok {
				opts = append([]string{o}, opts...)
			}
		}
		out[target] = strings.Join(opts, " ")
	}
	return out
}

// The plain annotations of diag_foreign_advice, with the advice of one
// generate run followed, are the directives of testdata/foreign, over
// the same SDK: what the foreign case's behaviour tests run is what a
// new user gets from one round of advice.
func TestForeignAdviceGivesTheForeignCase(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: generates in a scratch module")
	}
	sdkA, err := os.ReadFile(filepath.Join("..", "testdata", "foreign", "sdk", "sdk.go"))
	if err != nil {
		t.Fatal(err)
	}
	sdkB, err := os.ReadFile(filepath.Join("..", "testdata", "diag_foreign_advice", "sdk", "sdk.go"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(sdkA), string(sdkB)); diff != "" {
		t.Fatalf("the two cases' SDKs differ (-foreign +diag_foreign_advice):\n%s", diff)
	}
	mod, env := scratchModule(t, "idemgen.test/foreignadvice")
	copyTree(t, filepath.Join("..", "testdata", "diag_foreign_advice"), filepath.Join(mod, "p"))
	_, diags := generateIn(t, mod, env)
	if len(diags) == 0 {
		t.Fatal("no advice")
	}
	for _, d := range diags {
		file, fn, opt, add, paths, ok := advised(d)
		if !ok {
			t.Fatalf("a diagnostic that advises nothing: %s", d)
		}
		follow(t, filepath.Join(mod, "p", filepath.Base(file)), fn, opt, add, paths)
	}
	files, diags := generateIn(t, mod, env)
	if len(diags) > 0 || len(files) != 1 || files[0].Content == nil {
		t.Fatalf("after one round of advice: %d files, diagnostics:\n%s", len(files), strings.Join(diags, "\n"))
	}
	got := varDirectiveLines(t, filepath.Join(mod, "p", "x.go"))
	want := varDirectiveLines(t, filepath.Join("..", "testdata", "foreign", "foreign.go"))
	for target := range want {
		if !strings.HasPrefix(target, "sdk.") && !strings.HasPrefix(target, "(*sdk.") {
			delete(want, target) // the foreign case wraps another package too
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("directives after one round of advice (-testdata/foreign +followed):\n%s", diff)
	}
}

// Two packages of one run that wrap one function share its default name
// (its import path and name), so each is refused until name= tells them
// apart: they may key it differently, and one key space would then hold
// two derivations of keys.
func TestForeignNameSharedAcrossPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: generates in a scratch module")
	}
	mod, env := scratchModule(t, "idemgen.test/foreignnames")
	write(t, filepath.Join(mod, "sdk", "sdk.go"), []byte(`package sdk

import "context"

func Charge(ctx context.Context, id string, cents int64) (string, error) { return id, nil }
`))
	user := func(pkg, opts string) []byte {
		return []byte("package " + pkg + `

import "idemgen.test/foreignnames/sdk"

//idem:` + opts + `
var _ = sdk.Charge
`)
	}
	write(t, filepath.Join(mod, "a", "a.go"), user("a", "ttl=1h"))
	write(t, filepath.Join(mod, "b", "b.go"), user("b", "key=id"))
	_, diags := generateIn(t, mod, env)
	want := []string{
		`a/a.go:6:9: name "idemgen.test/foreignnames/sdk.Charge" of sdk.Charge (wrapped in a) is also the name of sdk.Charge (wrapped in b) (at b/b.go:6:9): two functions with one name share a key space and would answer each other's calls; give each its own name=`,
		`b/b.go:6:9: name "idemgen.test/foreignnames/sdk.Charge" of sdk.Charge (wrapped in b) is also the name of sdk.Charge (wrapped in a) (at a/a.go:6:9): two functions with one name share a key space and would answer each other's calls; give each its own name=`,
	}
	if diff := cmp.Diff(want, diags); diff != "" {
		t.Fatalf("diagnostics (-want +got):\n%s", diff)
	}
	write(t, filepath.Join(mod, "b", "b.go"), user("b", "key=id name=b.charge"))
	files, diags := generateIn(t, mod, env)
	if len(diags) > 0 || len(files) != 2 {
		t.Fatalf("with name=: %d files, diagnostics:\n%s", len(files), strings.Join(diags, "\n"))
	}
	for _, f := range files {
		if m := regexp.MustCompile(`Name: +"([^"]+)"`).FindSubmatch(f.Content); m == nil {
			t.Errorf("%s: no Spec name", f.Path)
		} else if want := map[string]string{"a": "idemgen.test/foreignnames/sdk.Charge", "b": "b.charge"}[filepath.Base(filepath.Dir(f.Path))]; string(m[1]) != want {
			t.Errorf("%s: Spec name %s, want %s", f.Path, m[1], want)
		}
	}
}
