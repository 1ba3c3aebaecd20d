// Package lib has an exported field of an unexported type.
package lib

type state struct{ N int }

// Result exposes a field whose type other packages cannot name.
type Result struct {
	ID    string
	State state
}
