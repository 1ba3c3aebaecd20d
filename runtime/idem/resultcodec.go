package idem

import (
	"fmt"

	"github.com/idemgen/idemgen/runtime/internal/impl"
)

// The per-function result codec. A generated wrapper's Spec carries the
// TypedCodec of its result type (Spec.Codec); it replaces the Guard's
// codec for that function's records, in Do and for stores that complete
// a record themselves (LeaseFrom, pgstore's CompleteInTx). Hand-written
// callers that leave Spec.Codec nil keep the Guard's codec (JSON unless
// WithCodec).

// codecOf is the codec that encodes spec's results.
func (g *Guard) codecOf(spec *Spec) Codec {
	if spec.Codec != nil {
		return spec.Codec
	}
	return g.codec
}

// decodeRecord decodes a stored result (the body behind the identity
// header) into v (a *R). A record of a function with its own codec that does not start with CodecMarker was
// written by the Guard's codec before the function had one (an older
// build): it is decoded by the Guard's codec, and bytes that codec cannot
// read either are ErrCorruptRecord.
func (g *Guard) decodeRecord(spec *Spec, data []byte, v any) error {
	if spec.Codec == nil {
		return g.codec.Unmarshal(data, v)
	}
	if len(data) > 0 && data[0] == impl.CodecMarker {
		return spec.Codec.Unmarshal(data, v)
	}
	if err := g.codec.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: neither a generated codec's record nor the Guard codec's: %w", ErrCorruptRecord, err)
	}
	return nil
}
