module github.com/idemgen/idemgen

go 1.26.0

require (
	github.com/dave/jennifer v1.7.1
	github.com/google/go-cmp v0.7.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sync v0.24.0
	golang.org/x/tools v0.52.0
	google.golang.org/protobuf v1.36.12
)

require golang.org/x/mod v0.42.0 // indirect

tool github.com/idemgen/idemgen/cmd/idemgen
