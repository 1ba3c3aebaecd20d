package idem

import "encoding/json"

// Codec encodes results for storage. The generator checks at generate time
// that every result type round-trips through encoding/json faithfully; a
// custom codec takes that responsibility on itself.
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// JSONCodec is the default codec, encoding/json.
type JSONCodec struct{}

// Marshal calls json.Marshal.
func (JSONCodec) Marshal(v any) ([]byte, error) { return json.Marshal(v) }

// Unmarshal calls json.Unmarshal.
func (JSONCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
