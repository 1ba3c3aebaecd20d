// Package sdk has an optional field type with unexported state and no key
// method: another package's generated code cannot read it.
package sdk

// Opt is absent, or present with a value.
type Opt[T comparable] struct {
	value   T
	present bool
}

// Value returns the value and whether it is present.
func (o Opt[T]) Value() (T, bool) { return o.value, o.present }
