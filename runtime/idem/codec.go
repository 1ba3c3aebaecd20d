package idem

import "encoding/json"

// Codec encodes results for storage. A Guard's codec (WithCodec; JSON by
// default) serves hand-written calls; idemgen's wrappers carry a generated
// codec of their result type in Spec.Codec, which takes precedence (see
// TypedCodec). A custom codec is responsible for replaying values faithfully.
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// jsonCodec is the default codec, encoding/json.
type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
