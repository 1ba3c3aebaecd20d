module github.com/idemgen/idemgen/tools/sqsemu

go 1.26.0

require (
	github.com/Admiral-Piett/goaws v0.4.5
	github.com/sirupsen/logrus v1.9.0
)

require (
	github.com/gorilla/mux v1.8.0 // indirect
	golang.org/x/sys v0.5.0 // indirect
)
