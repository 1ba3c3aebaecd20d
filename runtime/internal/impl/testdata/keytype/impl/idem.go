// Package idem is a second package named impl: its KeyBuilder's
// reflect.Type.String() is the runtime's, its identity is not.
package impl

// KeyBuilder has the short name of the runtime's.
type KeyBuilder struct{ N int }
