package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Root returns the directory of this repository's checkout (the root
// module's), found from this file's own path, whatever the test's working
// directory and module. It panics in a test built with -trimpath.
func Root() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		panic("testenv: no absolute path for this source file (built with -trimpath?): " + file)
	}
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// ScratchModule writes go.mod and go.sum into dir: a module named path
// that requires this repository's root module, replaced by the checkout,
// and each of also, which is either another module of the repository by
// its directory ("runtime/redisstore", also replaced by the checkout) or
// any module at a version ("github.com/google/go-cmp v0.7.0"). go.sum
// holds the go.sum files of the repository's modules it requires, so the
// go command can build it offline (GOFLAGS=-mod=mod GOPROXY=off
// GOWORK=off, OfflineGoEnv) when the module cache has their dependencies.
func ScratchModule(dir, path string, also ...string) error {
	root := Root()
	goLine, err := goVersion(root)
	if err != nil {
		return err
	}
	var mod, replace, sum strings.Builder
	fmt.Fprintf(&mod, "module %s\n\n%s\n\nrequire (\n\tgithub.com/idemgen/idemgen v0.0.0-00010101000000-000000000000\n", path, goLine)
	fmt.Fprintf(&replace, "\nreplace github.com/idemgen/idemgen => %s\n", root)
	sums := []string{root}
	for _, a := range also {
		if modPath, version, ok := strings.Cut(a, " "); ok {
			fmt.Fprintf(&mod, "\t%s %s\n", modPath, version)
			continue
		}
		fmt.Fprintf(&mod, "\tgithub.com/idemgen/idemgen/%s v0.0.0-00010101000000-000000000000\n", a)
		fmt.Fprintf(&replace, "\nreplace github.com/idemgen/idemgen/%s => %s\n", a, filepath.Join(root, a))
		sums = append(sums, filepath.Join(root, a))
	}
	mod.WriteString(")\n")
	mod.WriteString(replace.String())
	for _, d := range sums {
		b, err := os.ReadFile(filepath.Join(d, "go.sum"))
		if err != nil {
			return fmt.Errorf("testenv: scratch module: %w", err)
		}
		sum.Write(b)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod.String()), 0o644); err != nil {
		return fmt.Errorf("testenv: scratch module: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), []byte(sum.String()), 0o644); err != nil {
		return fmt.Errorf("testenv: scratch module: %w", err)
	}
	return nil
}

// OfflineGoEnv is the process environment with the settings that build a
// scratch module offline and outside the workspace: GOFLAGS=-mod=mod,
// GOPROXY=off, GOWORK=off.
func OfflineGoEnv() []string {
	return append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
}

// goVersion returns the root module's go line ("go 1.26.0"), which a
// scratch module repeats.
func goVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("testenv: scratch module: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "go ") {
			return strings.TrimSpace(line), nil
		}
	}
	return "", fmt.Errorf("testenv: scratch module: no go line in %s", filepath.Join(root, "go.mod"))
}
