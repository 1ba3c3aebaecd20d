// Package idem is a second package named idemimpl: its KeyBuilder's
// reflect.Type.String() is the runtime's, its identity is not.
package idemimpl

// KeyBuilder has the short name of the runtime's.
type KeyBuilder struct{ N int }
