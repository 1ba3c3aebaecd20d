package idemvet_test

import (
	"os"
	"testing"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/idemgen/idemgen/vet/idemvet"
)

type noopFact struct{}

func (*noopFact) AFact() {}

// noop is the baseline: an analyzer that does nothing but, like idemvet,
// declares a fact type, so the driver runs it on every dependency too.
var noop = &analysis.Analyzer{
	Name:      "noop",
	Doc:       "does nothing; the baseline of BenchmarkRootModule",
	Run:       func(*analysis.Pass) (any, error) { return nil, nil },
	FactTypes: []analysis.Fact{new(noopFact)},
}

// BenchmarkRootModule splits what `idemvet ./...` costs on this
// repository's root module (tests included, as the command's default
// -test=true): loading and type-checking every package and dependency
// from source (load), then running the analyzer over all of them (idemvet)
// against the baseline analyzer over the same loaded packages (noop).
func BenchmarkRootModule(b *testing.B) {
	load := func() []*packages.Package {
		pkgs, err := packages.Load(&packages.Config{
			Mode:  packages.LoadAllSyntax,
			Dir:   "../..",
			Tests: true,
			Env:   append(os.Environ(), "GOWORK=off"),
		}, "./...")
		if err != nil {
			b.Fatal(err)
		}
		return pkgs
	}
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			load()
		}
	})
	pkgs := load()
	for _, a := range []*analysis.Analyzer{noop, idemvet.Analyzer} {
		b.Run(a.Name, func(b *testing.B) {
			for b.Loop() {
				g, err := checker.Analyze([]*analysis.Analyzer{a}, pkgs, nil)
				if err != nil {
					b.Fatal(err)
				}
				for act := range g.All() {
					if act.Err != nil {
						b.Fatalf("%s: %v", act, act.Err)
					}
				}
			}
		})
	}
}
