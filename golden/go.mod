// golden/ holds expected generator output. The files are Go source that only
// compiles next to its testdata/ input, so this directory is its own module:
// `go build ./...` and `go vet ./...` of the main module skip it.
module github.com/idemgen/idemgen/golden

go 1.26.0
