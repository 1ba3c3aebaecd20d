// Package impl is the implementation behind runtime/idemimpl, shared with
// runtime/idem: the key builder, the result codecs' encoder and decoder,
// type identities, sealing and the layout of stored records. idem imports
// it, so idemimpl (which imports idem) can re-export it to generated code
// without a cycle, as protobuf-go's protoimpl re-exports internal/impl.
package impl

import "errors"

// The errors of this package's own checks. runtime/idem exports the same
// values under the same names; test for them there.
var (
	ErrInvalidKey         = errors.New("idem: invalid idempotency key")
	ErrCorruptRecord      = errors.New("idem: corrupt record")
	ErrResultIncompatible = errors.New("idem: stored result does not fit the result type (bump version=)")
)

// MaxIDLen is the longest caller-supplied ID (KeyBuilder.ID).
const MaxIDLen = 255
