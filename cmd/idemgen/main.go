// Command idemgen writes idempotent wrappers for functions annotated with
// //idem: directives. See docs/GENERATOR.md.
//
//	idemgen [-output idem_gen.go] [-tags t1,t2] [-check] [packages]
//
// With -check it writes nothing and exits 1 (printing a diff) when a
// generated file is stale or missing. Errors exit 2.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/idemgen/idemgen/generator"
)

// version is set with -ldflags "-X main.version=..." by releases.
var version = ""

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("idemgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	output := fs.String("output", generator.DefaultOutput, "name of the generated file in each package")
	check := fs.Bool("check", false, "write nothing; exit 1 with a diff if a generated file is stale or missing")
	tags := fs.String("tags", "", "comma-separated build tags to load packages with")
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: idemgen [flags] [packages]\n\nWrites %s (wrappers that run //idem: annotated functions at most once per key)\nin each package (default \".\").\n\nflags:\n", generator.DefaultOutput)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, "idemgen", versionString())
		return 0
	}
	cfg := generator.Config{Patterns: fs.Args(), Output: *output}
	if *tags != "" {
		cfg.BuildFlags = []string{"-tags=" + *tags}
	}
	files, err := generator.Generate(cfg)
	code := 0
	if err != nil {
		fmt.Fprintln(stderr, err)
		code = 2
	}
	cwd, _ := os.Getwd()
	for _, f := range files {
		name := f.Path
		if rel, rerr := filepath.Rel(cwd, f.Path); rerr == nil && !strings.HasPrefix(rel, "..") {
			name = rel
		}
		if !f.Stale() {
			continue
		}
		if *check {
			old, _ := os.ReadFile(f.Path)
			if f.Content == nil {
				fmt.Fprintf(stdout, "%s: stale: the package has no //idem: functions any more\n", name)
			} else {
				if old == nil {
					fmt.Fprintf(stdout, "%s: missing\n", name)
				}
				fmt.Fprint(stdout, unifiedDiff("a/"+filepath.ToSlash(name), "b/"+filepath.ToSlash(name), string(old), string(f.Content)))
			}
			code = max(code, 1)
			continue
		}
		if f.Content == nil {
			if rerr := os.Remove(f.Path); rerr != nil {
				fmt.Fprintln(stderr, "idemgen:", rerr)
				code = 2
			}
			continue
		}
		if werr := writeFile(f.Path, f.Content); werr != nil {
			fmt.Fprintln(stderr, "idemgen:", werr)
			code = 2
		}
	}
	return code
}

// writeFile replaces path atomically, so a build never sees half a file.
func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".idemgen-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
