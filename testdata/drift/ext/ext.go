// Package ext is a fixture (written for these tests): another package's
// struct with an unexported field, which the generated file cannot name.
package ext

type noCopy struct{}

// Options are keyed by their exported fields.
type Options struct {
	Region  string
	Retries int

	nocopy noCopy
}

// Level is read through a conversion to int64.
type Level int8
