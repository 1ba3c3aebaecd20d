// Package sdk is an SDK-style package: its optional request field keeps
// its state unexported and is read through methods, as an AI API's
// param.Opt[T] is.
package sdk

import "encoding/json"

// Opt is an optional value: absent, or present with a value (which may be
// the zero value).
type Opt[T comparable] struct {
	value   T
	present bool
}

// Some is a present value.
func Some[T comparable](v T) Opt[T] { return Opt[T]{value: v, present: true} }

// Value returns the value and whether it is present.
func (o Opt[T]) Value() (T, bool) { return o.value, o.present }

// MarshalJSON writes null when absent, else the value.
func (o Opt[T]) MarshalJSON() ([]byte, error) {
	if !o.present {
		return []byte("null"), nil
	}
	return json.Marshal(o.value)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (o *Opt[T]) UnmarshalJSON(p []byte) error {
	if string(p) == "null" {
		*o = Opt[T]{}
		return nil
	}
	o.present = true
	return json.Unmarshal(p, &o.value)
}

// MarshalText is the JSON form: how the SDK spells the field in a request.
func (o Opt[T]) MarshalText() ([]byte, error) { return o.MarshalJSON() }
