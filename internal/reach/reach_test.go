// Package reach measures how much of real third-party code idemgen wraps:
// for each package of testdata/sdks.txt it writes a scratch module whose
// one file names every exported function and method of that package with
// an error result (`//idem:` above `var _ = pkg.F`), generates, follows
// one round of the generator's advice, generates again, and builds and
// vets what it generated. It needs the Go module proxy, so it runs only
// with IDEM_REACH=1 (make reach); docs/GENERATOR.md records its numbers.
package reach

import (
	"bufio"
	"errors"
	"fmt"
	"go/types"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/idemgen/idemgen/generator"
	"github.com/idemgen/idemgen/internal/testenv"
)

// sdk is one line of testdata/sdks.txt: a module version and the
// packages of it to wrap.
type sdk struct {
	module, version string
	pkgs            []string
}

func readSDKs(t *testing.T) []sdk {
	f, err := os.Open(filepath.Join("testdata", "sdks.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []sdk
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) < 3 {
			t.Fatalf("sdks.txt: %q: want module version package...", line)
		}
		out = append(out, sdk{fs[0], fs[1], fs[2:]})
	}
	return out
}

// result is one package's measure.
type result struct {
	pkg, module           string
	targets, plain, after int
	crash                 string // a generator panic or error without positions
	build                 string // go build / go vet output after the advice, when it failed
	left                  []string
	reasons               []string // of the plain run's diagnostics
}

func TestReach(t *testing.T) {
	if os.Getenv("IDEM_REACH") == "" {
		t.Skip("set IDEM_REACH=1 (make reach) to run it; not part of make test or CI: it downloads third-party modules")
	}
	only := regexp.MustCompile(os.Getenv("IDEM_REACH_ONLY"))
	var results []result
	for _, s := range readSDKs(t) {
		for _, p := range s.pkgs {
			path := s.module
			if p != "." {
				path += "/" + p
			}
			if !only.MatchString(path) {
				continue
			}
			t.Run(path, func(t *testing.T) {
				r := measure(t, s, path)
				results = append(results, r)
				t.Logf("%s: %d targets, %d wrap plain, %d after one round of advice", path, r.targets, r.plain, r.after)
				for _, l := range r.left {
					t.Logf("left: %s", l)
				}
				if r.crash != "" {
					t.Errorf("generator crashed: %s", r.crash)
				}
				if r.build != "" {
					t.Errorf("generated code does not build or vet:\n%s", r.build)
				}
			})
		}
	}
	var b strings.Builder
	b.WriteString("| module | packages | functions | plain | after one round |\n|---|---:|---:|---:|---:|\n")
	type sum struct{ pkgs, targets, plain, after int }
	var modules []string
	sums := map[string]*sum{}
	for _, r := range results {
		m := sums[r.module]
		if m == nil {
			m = &sum{}
			sums[r.module] = m
			modules = append(modules, r.module)
		}
		m.pkgs++
		m.targets += r.targets
		m.plain += r.plain
		m.after += r.after
	}
	var plain []float64 // per module: a module of six packages counts once
	for _, name := range modules {
		m := sums[name]
		fmt.Fprintf(&b, "| %s | %d | %d | %d (%s) | %d (%s) |\n", name, m.pkgs, m.targets, m.plain, pct(m.plain, m.targets), m.after, pct(m.after, m.targets))
		if m.targets > 0 {
			plain = append(plain, float64(m.plain)/float64(m.targets))
		}
	}
	if len(plain) > 0 {
		slices.Sort(plain)
		fmt.Fprintf(&b, "\nmedian module, plain: %.0f%%\n", 100*plain[len(plain)/2])
	}
	counts := map[string]int{}
	for _, r := range results {
		for _, why := range r.reasons {
			counts[why]++
		}
	}
	whys := slices.SortedFunc(maps.Keys(counts), func(a, b string) int { return counts[b] - counts[a] })
	b.WriteString("\nthe plain annotation's most frequent refusals (diagnostics):\n")
	for i, why := range whys {
		if i == 12 {
			break
		}
		n := counts[why]
		if len(why) > 160 {
			why = why[:160] + "…"
		}
		fmt.Fprintf(&b, "%6d  %s\n", n, why)
	}
	t.Log("\n" + b.String())
}

func pct(n, of int) string {
	if of == 0 {
		return "-"
	}
	return strconv.Itoa(100*n/of) + "%"
}

// target is one function or method the scratch file names.
type target struct {
	expr string // sdk.New, (*sdk.Client).Get
	line int    // of its var in x.go
	opts map[string][]string
}

func measure(t *testing.T, s sdk, path string) result {
	r := result{pkg: path, module: s.module}
	dir := t.TempDir()
	if keep := os.Getenv("IDEM_REACH_KEEP"); keep != "" {
		dir = filepath.Join(keep, strings.NewReplacer("/", "_", ".", "_").Replace(path))
		os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if err := testenv.ScratchModule(dir, "reach.example/x", s.module+" "+s.version); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "x.go"), fmt.Sprintf("package x\n\nimport _ %q\n", path))
	run(t, dir, env, "go", "mod", "tidy")

	targets := enumerate(t, dir, env, path)
	r.targets = len(targets)
	if len(targets) == 0 {
		return r
	}
	writeTargets(t, dir, path, targets)
	diags, crash := generate(dir, env)
	if crash != "" {
		r.crash = crash
		return r
	}
	r.plain = len(targets) - len(refused(diags, targets))
	var plainDiags strings.Builder
	for _, d := range diags {
		r.reasons = append(r.reasons, reason(d.Msg))
		fmt.Fprintln(&plainDiags, d.String())
	}
	if os.Getenv("IDEM_REACH_KEEP") != "" {
		write(t, filepath.Join(dir, "plain.txt"), plainDiags.String())
	}

	for _, d := range diags {
		if tg := targetOf(d, targets); tg != nil {
			for _, m := range adviceRE.FindAllStringSubmatch(d.Msg, -1) {
				tg.opts[m[1]] = append(tg.opts[m[1]], strings.Split(m[2], ",")...)
			}
		}
	}
	writeTargets(t, dir, path, targets)
	files, err := generator.Generate(generator.Config{Dir: dir, Env: env})
	diags = nil
	var gerr *generator.Error
	if errors.As(err, &gerr) {
		diags = gerr.Diagnostics
	} else if err != nil {
		r.crash = err.Error()
		return r
	}
	left := refused(diags, targets)
	r.after = len(targets) - len(left)
	for _, d := range diags {
		r.left = append(r.left, d.String())
	}
	if len(left) > 0 {
		// Generate what wraps: the refused targets leave the file.
		var keep []*target
		for _, tg := range targets {
			if !left[tg] {
				keep = append(keep, tg)
			}
		}
		writeTargets(t, dir, path, keep)
		files, err = generator.Generate(generator.Config{Dir: dir, Env: env})
		if err != nil {
			r.build = "after dropping the refused targets: " + err.Error()
			return r
		}
	}
	for _, f := range files {
		if f.Content != nil {
			write(t, f.Path, string(f.Content))
		}
	}
	for _, args := range [][]string{{"build", "./..."}, {"vet", "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			r.build += fmt.Sprintf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return r
}

// reason is a diagnostic without its function, paths and advice: what
// kind of refusal it is.
func reason(msg string) string {
	msg = adviceRE.ReplaceAllString(msg, "add …")
	if i := strings.Index(msg, ": "); i >= 0 && !strings.Contains(msg[:i], " ") {
		msg = msg[i+2:] // "Fn: "
	}
	msg = pathRE.ReplaceAllString(msg, "…")
	return msg
}

var pathRE = regexp.MustCompile(`\b[a-zA-Z_][\w]*(\.[\w\[\]]+)+|\(and \d+ more[^)]*\)|\d+`)

var adviceRE = regexp.MustCompile("add `([a-z_]+)=([^`]+)`")

// generate runs the generator, a panic reported as a crash.
func generate(dir string, env []string) (diags []generator.Diagnostic, crash string) {
	defer func() {
		if p := recover(); p != nil {
			crash = fmt.Sprint("panic: ", p)
		}
	}()
	_, err := generator.Generate(generator.Config{Dir: dir, Env: env})
	var gerr *generator.Error
	if errors.As(err, &gerr) {
		return gerr.Diagnostics, ""
	}
	if err != nil {
		return nil, err.Error()
	}
	return nil, ""
}

// refused is the set of targets some diagnostic is positioned at.
func refused(diags []generator.Diagnostic, targets []*target) map[*target]bool {
	out := map[*target]bool{}
	for _, d := range diags {
		if tg := targetOf(d, targets); tg != nil {
			out[tg] = true
		}
	}
	return out
}

func targetOf(d generator.Diagnostic, targets []*target) *target {
	if filepath.Base(d.Pos.Filename) != "x.go" {
		return nil
	}
	for _, tg := range targets {
		if tg.line == d.Pos.Line || tg.line-1 == d.Pos.Line { // the var, or its directive
			return tg
		}
	}
	return nil
}

// enumerate lists the exported functions of path, and the exported
// methods of its exported named types, whose last result is error.
func enumerate(t *testing.T, dir string, env []string, path string) []*target {
	cfg := &packages.Config{Mode: packages.NeedTypes | packages.NeedName, Dir: dir, Env: env}
	pkgs, err := packages.Load(cfg, path)
	if err != nil || len(pkgs) != 1 || pkgs[0].Types == nil {
		t.Fatalf("load %s: %v", path, err)
	}
	errType := types.Universe.Lookup("error").Type()
	returnsErr := func(sig *types.Signature) bool {
		r := sig.Results()
		return r.Len() > 0 && types.Identical(r.At(r.Len()-1).Type(), errType)
	}
	name := pkgs[0].Types.Name()
	scope := pkgs[0].Types.Scope()
	var out []*target
	for _, n := range scope.Names() {
		obj := scope.Lookup(n)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Func:
			// A generic function or type cannot be named uninstantiated
			// in var _ = …: the user names an instance, which this
			// measure cannot choose.
			if sig := obj.Type().(*types.Signature); sig.TypeParams().Len() == 0 && returnsErr(sig) {
				out = append(out, &target{expr: name + "." + n})
			}
		case *types.TypeName:
			named, ok := obj.Type().(*types.Named)
			if !ok || obj.IsAlias() || types.IsInterface(named) || named.TypeParams().Len() > 0 {
				continue
			}
			ms := types.NewMethodSet(types.NewPointer(named))
			for i := 0; i < ms.Len(); i++ {
				m := ms.At(i).Obj().(*types.Func)
				if !m.Exported() || len(ms.At(i).Index()) > 1 || !returnsErr(m.Type().(*types.Signature)) {
					continue // promoted methods are their own type's
				}
				out = append(out, &target{expr: "(*" + name + "." + n + ")." + m.Name()})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].expr < out[j].expr })
	for _, tg := range out {
		tg.opts = map[string][]string{}
	}
	return out
}

// writeTargets writes x.go: one directive and var per target.
func writeTargets(t *testing.T, dir, path string, targets []*target) {
	var b strings.Builder
	fmt.Fprintf(&b, "package x\n\nimport %q\n", path)
	line := 4
	for _, tg := range targets {
		directive := "//idem:ttl=24h"
		var names []string
		for opt := range tg.opts {
			names = append(names, opt)
		}
		sort.Strings(names)
		for _, opt := range names {
			vals := slices.Compact(slices.Sorted(slices.Values(tg.opts[opt])))
			if opt == "key" { // key= order is the key's
				vals = nil
				for _, v := range tg.opts[opt] {
					if !slices.Contains(vals, v) {
						vals = append(vals, v)
					}
				}
			}
			directive += " " + opt + "=" + strings.Join(vals, ",")
		}
		fmt.Fprintf(&b, "\n%s\nvar _ = %s\n", directive, tg.expr)
		line += 3
		tg.line = line - 1
	}
	write(t, filepath.Join(dir, "x.go"), b.String())
}

func write(t *testing.T, file, s string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}
