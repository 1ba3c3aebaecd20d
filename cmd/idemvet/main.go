// Command idemvet runs the idemvet analyzer (package vet/idemvet): calls
// that bypass idemgen's wrappers, stale generated files, wrappers called
// with a fresh context, and //idem: directive problems.
//
// Standalone, on package patterns:
//
//	idemvet ./...
//
// As go vet's analysis tool (the go command hands it one package at a
// time, with facts from the packages it imports):
//
//	go vet -vettool=$(command -v idemvet) ./...
//
// Flags: -testfiles=false leaves _test.go files out of the bypass check;
// -output names the generated file when idemgen runs with -output; -fix
// (standalone) applies the suggested fixes.
package main

import (
	"github.com/idemgen/idemgen/vet/idemvet"
	"golang.org/x/tools/go/analysis/singlechecker"
)

func main() { singlechecker.Main(idemvet.Analyzer) }
