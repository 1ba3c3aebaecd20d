// Package golangci registers the idemvet analyzer (vet/idemvet) as a
// golangci-lint module plugin named "idemvet". It is a module of its own,
// so the core module does not require golangci-lint's plugin API.
//
// In .golangci.yml:
//
//	linters:
//	  enable: [idemvet]
//	  settings:
//	    custom:
//	      idemvet:
//	        type: module
//	        description: calls that bypass idemgen wrappers, stale idem_gen.go
//	        settings:
//	          testfiles: true   # report direct calls in _test.go files too
//	          output: idem_gen.go
//
// docs/GENERATOR.md says how to build a golangci-lint that has it.
package golangci

import (
	"fmt"
	"strconv"

	"github.com/golangci/plugin-module-register/register"
	"golang.org/x/tools/go/analysis"

	"github.com/idemgen/idemgen/vet/idemvet"
)

func init() { register.Plugin("idemvet", New) }

// Settings are the plugin's settings in .golangci.yml: idemvet's flags.
type Settings struct {
	// TestFiles reports direct calls in _test.go files too (default true).
	TestFiles *bool `json:"testfiles"`
	// Output is the generated file's name, when idemgen runs with -output.
	Output string `json:"output"`
}

// New is the plugin's constructor, called by golangci-lint with the
// settings of .golangci.yml.
func New(conf any) (register.LinterPlugin, error) {
	s, err := register.DecodeSettings[Settings](conf)
	if err != nil {
		return nil, err
	}
	if s.TestFiles != nil {
		if err := idemvet.Analyzer.Flags.Set("testfiles", strconv.FormatBool(*s.TestFiles)); err != nil {
			return nil, fmt.Errorf("idemvet: testfiles: %w", err)
		}
	}
	if s.Output != "" {
		if err := idemvet.Analyzer.Flags.Set("output", s.Output); err != nil {
			return nil, fmt.Errorf("idemvet: output: %w", err)
		}
	}
	return plugin{}, nil
}

type plugin struct{}

func (plugin) BuildAnalyzers() ([]*analysis.Analyzer, error) {
	return []*analysis.Analyzer{idemvet.Analyzer}, nil
}

// GetLoadMode asks for types: the analyzer reads type information and
// exports facts.
func (plugin) GetLoadMode() string { return register.LoadModeTypesInfo }
