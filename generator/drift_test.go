package generator

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDrift generates testdata/drift in a scratch module, then changes a
// struct the key code reads, or a type it converts, without regenerating,
// as a user would: the build must fail in idem_gen.go with a message that
// names the drift check or the type, and build again once regenerated. Each change is one package:
// a copy of the case and of its ext fixture.
func TestDrift(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: generates and builds in a scratch module")
	}
	type edit = driftEdit
	// A check that spells every field converts a value to its field list;
	// the others name fieldsChanged_runGoGenerate.
	const fields = `fieldsChanged_runGoGenerate`
	converts := func(t string) string {
		return `cannot convert ` + regexp.QuoteMeta(t+"{}") + ` \(value of struct type ` + regexp.QuoteMeta(t) + `\) to type struct\{`
	}
	variants := []driftVariant{
		{"add", []edit{{"drift.go", "\tNote   string `idem:\"-\"`\n", "\tNote   string `idem:\"-\"`\n\tExtra  string\n"}}, converts("Req")},
		{"retype", []edit{{"drift.go", "\tCount  int\n", "\tCount  int16\n"}}, converts("Req")},
		{"remove", []edit{{"drift.go", "\tID     string\n", ""}}, converts("Req")},
		{"embedded", []edit{{"drift.go", "type Base struct {\n\tTenant string\n", "type Base struct {\n\tTenant string\n\tRegion string\n"}}, converts("Base")},
		{"foreign", []edit{{"ext/ext.go", "\tRetries int\n", "\tRetries int32\n"}}, fields},
		{"foreignadd", []edit{{"ext/ext.go", "\tRetries int\n", "\tRetries int\n\tZone    string\n"}}, ""},
		// A type redefined, not a field: the conversions in the key and
		// codec code would still compile and truncate (10.50 and 10.99
		// sharing a key, 10.99 replaying as 10).
		{"underlying", []edit{{"drift.go", "\tCents int64\n", "\tCents float64\n"}}, `new\(Cents\)`},
		{"stringtoint", []edit{{"drift.go", "\tCode  string\n", "\tCode  int\n"}}, `new\(Code\)`},
		{"elem", []edit{{"drift.go", "\tCodes []int32\n", "\tCodes []float32\n"}}, `new\(Codes\)`},
		{"widen", []edit{{"drift.go", "\tCents int64\n", "\tCents int32\n"}}, `new\(Cents\)`},
		{"alias", []edit{{"drift.go", "\tUnits = int32\n", "\tUnits = float32\n"}}, `new\(Units\)`},
		{"resultonly", []edit{{"drift.go", "\tRate  float32\n", "\tRate  float64\n"}}, `new\(Rate\)`},
		{"foreigntype", []edit{{"ext/ext.go", "type Level int8\n", "type Level float32\n"}}, `new\(ext\.Level\)`},
		// Instances of generic types: one of a concrete instance, one read
		// with the function's type parameter (checked inside a generic
		// function).
		{"instance", []edit{{"generic.go", "\tSet   bool\n", "\tSet   bool\n\tExtra int\n"}}, converts("Opt[int64]")},
		{"typeparaminstance", []edit{{"generic.go", "\tItems []T\n", "\tItems []T\n\tMore  []T\n"}}, fields},
	}
	// A module path without a dot (go mod init myapp) is spelt like the
	// standard library's, whose types are not pinned; the module's are.
	for _, modPath := range []string{"idemgen.test/drift", "myapp"} {
		t.Run(modPath, func(t *testing.T) { testDrift(t, modPath, variants) })
	}
}

// driftVariant is one change TestDrift makes without regenerating.
type driftVariant struct {
	name  string
	edits []driftEdit
	// want matches the compiler's message at a line of idem_gen.go;
	// "" when the build is expected to pass (a field gained by
	// another package's struct with unexported fields: only idemgen
	// -check sees it).
	want string
}

type driftEdit struct{ file, old, new string }

func testDrift(t *testing.T, modPath string, variants []driftVariant) {
	mod, env := scratchModule(t, modPath)
	src := filepath.Join("..", "testdata", "drift")
	for _, v := range variants {
		for _, f := range []string{"drift.go", "generic.go", "ext/ext.go"} {
			data, err := os.ReadFile(filepath.Join(src, f))
			if err != nil {
				t.Fatal(err)
			}
			data = []byte(strings.ReplaceAll(string(data), "github.com/idemgen/idemgen/testdata/drift/ext", modPath+"/"+v.name+"/ext"))
			write(t, filepath.Join(mod, v.name, f), data)
		}
	}
	regenerate := func() []File {
		t.Helper()
		files, diags := generateIn(t, mod, env)
		if len(diags) > 0 {
			t.Fatalf("generate: %s", strings.Join(diags, "\n"))
		}
		for _, f := range files {
			write(t, f.Path, f.Content)
		}
		return files
	}
	build := func() (string, bool) {
		cmd := exec.Command("go", "build", "./...")
		cmd.Dir, cmd.Env = mod, env
		out, err := cmd.CombinedOutput()
		return string(out), err == nil
	}
	regenerate()
	if out, ok := build(); !ok {
		t.Fatalf("freshly generated code does not build:\n%s", out)
	}
	for _, v := range variants {
		for _, e := range v.edits {
			path := filepath.Join(mod, v.name, e.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), e.old) {
				t.Fatalf("%s: %q not found in %s", v.name, e.old, e.file)
			}
			write(t, path, []byte(strings.Replace(string(data), e.old, e.new, 1)))
		}
	}
	out, ok := build()
	if ok {
		t.Fatalf("a struct the key code reads changed and the stale generated code still builds:\n%s", out)
	}
	// go build prints each failing package under "# path".
	failed := map[string]string{}
	for _, sec := range regexp.MustCompile(`(?m)^# `).Split(out, -1)[1:] {
		pkg, body, _ := strings.Cut(sec, "\n")
		failed[strings.TrimPrefix(pkg, modPath+"/")] = body
	}
	for _, v := range variants {
		body, fails := failed[v.name]
		caught := v.want != ""
		switch {
		case caught && !fails:
			t.Errorf("%s: the stale generated code still builds", v.name)
		case caught && !regexp.MustCompile(`(?m)^\S*idem_gen\.go:\d+:\d+: .*`+v.want).MatchString(body):
			t.Errorf("%s: the build fails, but not at a line of idem_gen.go naming %s:\n%s", v.name, v.want, body)
		case !caught && fails:
			t.Errorf("%s: expected to build (a field gained by another package's struct with unexported fields is not seen by the compiler):\n%s", v.name, body)
		}
		if fails {
			t.Logf("%s:\n%s", v.name, body)
		}
	}
	files := regenerate()
	if out, ok := build(); !ok {
		t.Fatalf("after regenerating, the build still fails:\n%s", out)
	}
	// What the compiler cannot see, idemgen -check does: the file changed.
	for _, f := range files {
		if strings.Contains(f.Path, "foreignadd") && !strings.Contains(string(f.Content), "Zone") {
			t.Errorf("foreignadd: the regenerated key code does not read the new field")
		}
	}
}
