// Package idem is a second package named idem: its KeyBuilder's
// reflect.Type.String() is the runtime's, its identity is not.
package idem

// KeyBuilder has the short name of the runtime's.
type KeyBuilder struct{ N int }
