package idem

// Keyer is implemented by types that name their own key: IdemKey returns
// the value that identifies the receiver, which is keyed as a value held
// in an `any` parameter is (by its dynamic type and value): a string,
// a number, a bool, []byte, time.Time, a []any or map[string]any of such
// values, another Keyer, or a type with a MarshalBinary or MarshalText
// method. Any other value (a struct, a channel) fails the call with
// ErrInvalidKey before the function runs.
//
// The generator uses IdemKey for any parameter type that implements it,
// including types it cannot read (interfaces, structs with unexported
// fields):
//
//	func (o Order) IdemKey() any { return []any{o.Customer, o.ID} }
type Keyer interface {
	IdemKey() any
}
