// Package other holds the types the key property test (internal/keyprop)
// takes from another package: exported structs and named types, and types
// that key and store themselves through methods (a text-marshaled
// decimal, a Keyer, a binary-marshaled pair), which its random structs
// embed next to fields of their own.
package other

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Code is another package's named string.
type Code string

// Point is another package's exported struct.
type Point struct {
	X, Y int32
}

// Dec is a decimal with unexported state that marshals itself as text,
// as decimal packages do.
type Dec struct {
	units int64
	scale uint8
}

// NewDec returns units × 10^-scale.
func NewDec(units int64, scale uint8) Dec { return Dec{units, scale} }

// MarshalText writes units/scale, so 1/1 and 10/2 are different texts.
func (d Dec) MarshalText() ([]byte, error) { return fmt.Appendf(nil, "%d/%d", d.units, d.scale), nil }

// UnmarshalText reads what MarshalText writes.
func (d *Dec) UnmarshalText(p []byte) error {
	_, err := fmt.Sscanf(string(p), "%d/%d", &d.units, &d.scale)
	return err
}

// Tag writes its own key material and stores itself as text.
type Tag struct{ name string }

// NewTag returns a Tag.
func NewTag(name string) Tag { return Tag{name} }

// IdemKey keys a Tag by its name.
func (t Tag) IdemKey() any { return t.name }

// MarshalText writes the name.
func (t Tag) MarshalText() ([]byte, error) { return []byte(t.name), nil }

// UnmarshalText reads what MarshalText writes.
func (t *Tag) UnmarshalText(p []byte) error {
	t.name = string(p)
	return nil
}

// Bin marshals itself as four bytes.
type Bin struct{ hi, lo uint16 }

// NewBin returns a Bin.
func NewBin(hi, lo uint16) Bin { return Bin{hi, lo} }

// MarshalBinary packs both halves into four big-endian bytes.
func (b Bin) MarshalBinary() ([]byte, error) {
	return binary.BigEndian.AppendUint32(nil, uint32(b.hi)<<16|uint32(b.lo)), nil
}

// UnmarshalBinary reads what MarshalBinary writes.
func (b *Bin) UnmarshalBinary(p []byte) error {
	if len(p) != 4 {
		return errors.New("other.Bin: want 4 bytes")
	}
	v := binary.BigEndian.Uint32(p)
	b.hi, b.lo = uint16(v>>16), uint16(v)
	return nil
}
