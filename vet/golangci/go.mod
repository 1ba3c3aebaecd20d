module github.com/idemgen/idemgen/vet/golangci

go 1.26.0

require (
	github.com/golangci/plugin-module-register v0.1.2
	github.com/google/go-cmp v0.7.0
	github.com/idemgen/idemgen v0.0.0-00010101000000-000000000000
	golang.org/x/tools v0.52.0
)

require (
	github.com/dave/jennifer v1.7.1 // indirect
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
)

replace github.com/idemgen/idemgen => ../..
