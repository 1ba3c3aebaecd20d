package generator

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/internal/testenv"
)

// scratchModule makes a module in a temporary directory that uses this
// repository (runtime and testdata fixtures) by a replace directive, and
// returns its directory and the environment to run the go command in it.
func scratchModule(t *testing.T, name string) (string, []string) {
	t.Helper()
	return newScratch(t, name), testenv.OfflineGoEnv()
}

// generateIn runs the generator over every package of a scratch module.
func generateIn(t *testing.T, mod string, env []string) ([]File, []string) {
	t.Helper()
	files, err := Generate(Config{Dir: mod, Patterns: []string{"./..."}, Env: env})
	var gerr *Error
	if err != nil && !errors.As(err, &gerr) {
		t.Fatalf("Generate: %v", err)
	}
	var diags []string
	if gerr != nil {
		for _, d := range gerr.Diagnostics {
			diags = append(diags, d.String())
		}
	}
	return files, diags
}

// advice matches the exclude= (or, to keep an SDK's idempotency key, the
// key=) a diagnostic advises, at its very end.
var advice = regexp.MustCompile("^([^:]+):\\d+:\\d+: (\\w+): cannot key .*(add|change exclude= to) `(exclude|key)=([^`]+)`\\)$")

// omitAdvice matches a result diagnostic's omit= advice: file, function
// (or method) name, paths.
var omitAdvice = regexp.MustCompile("^([^:]+):\\d+:\\d+: (?:function|method) (?:\\w+\\.)*(\\w+): result .*\\(add `omit=([^`]+)`\\)$")

// advised returns what d advises: file, function, option, whether to add
// (else replace), paths; ok false if it advises nothing.
func advised(d string) (file, fn, opt string, add bool, paths string, ok bool) {
	if m := advice.FindStringSubmatch(d); m != nil {
		return m[1], m[2], m[4], m[3] == "add", m[5], true
	}
	if m := omitAdvice.FindStringSubmatch(d); m != nil {
		return m[1], m[2], "omit", true, m[3], true
	}
	return "", "", "", false, "", false
}

// TestAdviceApplies follows the advice of every diagnostic case that gives
// some, as a user would: write the advised option into the directive,
// regenerate, repeat. Each round must make progress (fewer diagnostics);
// at the end only the diagnostics that advised nothing remain, and the
// packages with none left generate a file that builds.
func TestAdviceApplies(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: regenerates and builds in a scratch module")
	}
	goldens, _ := filepath.Glob(filepath.Join("..", "golden", "*", goldenDiags))
	mod, env := scratchModule(t, "idemgen.test/advice")
	var cases []string
	for _, g := range goldens {
		data, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "`exclude=") && !strings.Contains(string(data), "`omit=") {
			continue
		}
		name := filepath.Base(filepath.Dir(g))
		cases = append(cases, name)
		files, _ := filepath.Glob(filepath.Join("..", "testdata", name, "*.go"))
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				copyFile(t, f, filepath.Join(mod, name, filepath.Base(f)))
			}
		}
	}
	if len(cases) < 5 {
		t.Fatalf("only %d diagnostic cases advise an exclude= or omit=: %v", len(cases), cases)
	}
	_, first := generateIn(t, mod, env)
	var silent []string // diagnostics that advise nothing: they stay
	for _, d := range first {
		if _, _, _, _, _, ok := advised(d); !ok {
			silent = append(silent, d)
		}
	}
	diags := first
	var files []File
	for round := 1; ; round++ {
		applied := map[string]bool{} // one advice per function and round
		for _, d := range diags {
			file, fn, opt, add, paths, ok := advised(d)
			if !ok || applied[file+" "+fn] {
				continue
			}
			applied[file+" "+fn] = true
			follow(t, filepath.Join(mod, file), fn, opt, add, paths)
		}
		if len(applied) == 0 {
			break
		}
		if round > 10 {
			t.Fatalf("still advising after 10 rounds:\n%s", strings.Join(diags, "\n"))
		}
		var next []string
		files, next = generateIn(t, mod, env)
		if len(next) >= len(diags) {
			t.Fatalf("round %d: following the advice made no progress: %d diagnostics before, %d after:\n%s", round, len(diags), len(next), strings.Join(next, "\n"))
		}
		t.Logf("round %d: %d → %d diagnostics", round, len(diags), len(next))
		diags = next
	}
	// What is left: the diagnostics that advised nothing, and in a file
	// with a key= path that cannot be keyed, the payload paths under that
	// path (exclude= must not overlap key=: the key= line is the fix).
	stays := map[string]bool{}
	blocked := map[string]bool{}
	for _, d := range silent {
		stays[d] = true
		if strings.Contains(d, ": key: cannot key ") {
			blocked[strings.SplitN(d, ":", 2)[0]] = true
		}
	}
	for _, d := range diags {
		if !stays[d] && !blocked[strings.SplitN(d, ":", 2)[0]] {
			t.Errorf("left after following every advice: %s", d)
		}
		delete(stays, d)
	}
	for d := range stays {
		t.Errorf("a diagnostic that advised nothing went away: %s", d)
	}
	generated := 0
	for _, f := range files {
		if f.Content != nil {
			write(t, f.Path, f.Content)
			generated++
		}
	}
	if generated == 0 {
		t.Errorf("no package generated after following the advice")
	}
	build := exec.Command("go", "build", "./...")
	build.Dir, build.Env = mod, env
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build after following the advice: %v\n%s", err, out)
	}
}

// follow writes opt=paths (exclude= or omit=) into the directive of
// function fn in file: added to the opt= it has or appended to its last
// //idem: line (add), or replacing the opt= it has. An interface method
// annotated by its interface's directive gets a line of its own (the
// interface's directive cannot carry these options).
func follow(t *testing.T, file, fn, opt string, add bool, paths string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	// A function's declaration (generic or not), or the var _ = pkg.Func
	// that wraps another package's function.
	decl := regexp.MustCompile(`^(func (\([^)]*\) )?` + fn + `[\[(]|var _ = .*\b` + fn + `$)`)
	at, indent := -1, ""
	for i, l := range lines {
		if decl.MatchString(l) {
			at = i
		}
	}
	if at < 0 {
		method := regexp.MustCompile(`^(\s+)` + fn + `\(`) // in an interface's body
		for i, l := range lines {
			if m := method.FindStringSubmatch(l); m != nil {
				at, indent = i, m[1]
			}
		}
	}
	if at < 0 {
		t.Fatalf("%s: no func %s", file, fn)
	}
	last, has := -1, false
	re := regexp.MustCompile(`\b` + opt + `=(\S+)`)
	for i := at - 1; i >= 0; i-- {
		l, ok := strings.CutPrefix(lines[i], indent)
		if !ok || !strings.HasPrefix(l, "//") {
			break
		}
		if strings.HasPrefix(l, "//idem:") {
			if last < 0 {
				last = i
			}
			if re.MatchString(l) {
				has = true
				if add {
					lines[i] = indent + re.ReplaceAllString(l, opt+"=${1},"+paths)
				} else {
					lines[i] = indent + re.ReplaceAllLiteralString(l, opt+"="+paths)
				}
			}
		}
	}
	switch {
	case last < 0 && indent != "":
		lines = append(lines[:at], append([]string{indent + "//idem:" + opt + "=" + paths}, lines[at:]...)...)
	case last < 0:
		t.Fatalf("%s: func %s has no //idem: line", file, fn)
	case !has:
		lines[last] += " " + opt + "=" + paths
	}
	write(t, file, []byte(strings.Join(lines, "\n")))
}

// TestAdviceConvergesInOneRound follows every advice of one run at once,
// as a user would (each function's advised paths merged per option), and
// requires the second run to leave only the diagnostics that advised
// nothing: rounds to convergence is 1, recursive types (http.Request ↔
// http.Response, in keys and in results) and SDK parameter structs
// included.
func TestAdviceConvergesInOneRound(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: regenerates in a scratch module")
	}
	for _, tc := range []struct {
		name string
		want []string // what the advised options must name, per function
	}{
		{"diag_result_rest_embedded", []string{"Get omit=r2.Response"}},
		{"diag_result_rest_response", []string{"Get omit=r2"}},
		{"diag_result_recursive_func", []string{"Walk omit=r1"}},
		{"diag_key_recursive_foreign", []string{"Send exclude=in.Req"}},
		{"diag_key_recursive_own", []string{"F exclude=in.Tree"}},
		{"diag_sdk_params", []string{"Charge key=params.Params.IdempotencyKey"}},
		{"diag_foreign_advice", []string{"New key=params.Params.IdempotencyKey", "Create omit=r2"}},
		{"diag_unkeyable_func_chan", nil},
		{"diag_unkeyable_foreign_struct", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mod, env := scratchModule(t, "idemgen.test/converge")
			copyTree(t, filepath.Join("..", "testdata", tc.name), filepath.Join(mod, tc.name))
			_, first := generateIn(t, mod, env)
			type target struct{ file, fn, opt string }
			paths := map[target][]string{}
			var order []target
			var silent []string
			for _, d := range first {
				file, fn, opt, _, p, ok := advised(d)
				if !ok {
					silent = append(silent, d)
					continue
				}
				k := target{file, fn, opt}
				if _, seen := paths[k]; !seen {
					order = append(order, k)
				}
				paths[k] = append(paths[k], strings.Split(p, ",")...)
			}
			var got []string
			for _, k := range order {
				merged := mergePaths(paths[k])
				got = append(got, k.fn+" "+k.opt+"="+strings.Join(merged, ","))
				follow(t, filepath.Join(mod, k.file), k.fn, k.opt, false, strings.Join(merged, ","))
			}
			if tc.want != nil {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("advised options (-want +got):\n%s", diff)
				}
			}
			files, second := generateIn(t, mod, env)
			if diff := cmp.Diff(silent, second); diff != "" {
				t.Fatalf("second run after following every advice of the first (-want +got):\n%s", diff)
			}
			if len(silent) > 0 {
				return
			}
			for _, f := range files {
				if f.Content != nil {
					write(t, f.Path, f.Content)
				}
			}
			build := exec.Command("go", "build", "./...")
			build.Dir, build.Env = mod, env
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build after following the advice: %v\n%s", err, out)
			}
		})
	}
}

// mergePaths is paths without repeats and without paths under another,
// as the options merge them (what a user would write).
func mergePaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		out = addPath(out, p)
	}
	return out
}

// copyTree copies the non-test Go files of dir and its subfolders.
func copyTree(t *testing.T, dir, to string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		copyFile(t, p, filepath.Join(to, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// adviceOpt is one option a diagnostic advises: `exclude=a,b`, `omit=r2`.
var adviceOpt = regexp.MustCompile("`(exclude|omit|key)=([^`]+)`")

// nonMinimalAdvice returns what is wrong with the advice of diags: a path
// named twice, or under another path it names, in one option or across
// the lines of one function (following every line at once must name each
// path once).
func nonMinimalAdvice(diags []string) []string {
	type fnOpt struct{ file, fn, opt string }
	all := map[fnOpt][]string{}
	var bad []string
	for _, d := range diags {
		for _, m := range adviceOpt.FindAllStringSubmatch(d, -1) {
			paths := strings.Split(m[2], ",")
			if m[1] != "key" {
				if got := mergePaths(paths); len(got) != len(paths) {
					bad = append(bad, "advises "+m[1]+"="+m[2]+", not minimal: "+d)
				}
			}
			file, fn, _, _, _, ok := advised(d)
			if ok && m[1] == "omit" {
				k := fnOpt{file, fn, m[1]}
				all[k] = append(all[k], paths...)
			}
		}
	}
	for k, paths := range all {
		if got := mergePaths(paths); len(got) != len(paths) {
			bad = append(bad, k.file+": "+k.fn+": the lines advise "+k.opt+"="+strings.Join(paths, ",")+" together, not minimal")
		}
	}
	return bad
}

// TestAdviceMinimal: no advice in the diagnostics corpus names a path
// twice or a path under another it names.
func TestAdviceMinimal(t *testing.T) {
	goldens, _ := filepath.Glob(filepath.Join("..", "golden", "*", goldenDiags))
	var diags []string
	for _, g := range goldens {
		data, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(filepath.Dir(g))
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			diags = append(diags, name+"/"+l)
		}
	}
	for _, b := range nonMinimalAdvice(diags) {
		t.Error(b)
	}
	for _, tc := range []struct {
		diags []string
		bad   int
	}{
		{[]string{"x.go:1:1: F: cannot key a.b: why (add `exclude=a.b,a.c,a.b`)"}, 1},
		{[]string{"x.go:1:1: F: cannot key a.b: why (add `exclude=a,a.c`)"}, 1},
		{[]string{"x.go:1:1: function F: result 1 (T) cannot be stored faithfully: r1.X: why (add `omit=r1`)",
			"x.go:1:1: function F: result 1 (T) cannot be stored faithfully: r1.Y: why (add `omit=r1.Y`)"}, 1},
		{[]string{"x.go:1:1: F: cannot key a.b: why (add `exclude=a.b,a.c`)"}, 0},
	} {
		if got := nonMinimalAdvice(tc.diags); len(got) != tc.bad {
			t.Errorf("nonMinimalAdvice(%q) = %q, want %d problems", tc.diags, got, tc.bad)
		}
	}
}
