package idem

import "github.com/idemgen/idemgen/runtime/idemimpl"

// Keyer is implemented by types that write their own key material. The
// generator uses it for any parameter type that implements it, including
// types it cannot read (interfaces, structs with unexported fields).
// IdemKey writes the value's identifying fields with the builder's
// methods (String, Int, Time, ...); see idemimpl.KeyBuilder.
type Keyer interface {
	IdemKey(b *idemimpl.KeyBuilder)
}
