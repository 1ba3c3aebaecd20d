// Package idemimpl is the support code of idemgen's generated wrappers:
// the key builder, the result codecs' encoder and decoder, type
// identities and the layout of stored records.
//
// It is for generated code only (and for stores and tools that read
// records byte for byte); it has no compatibility promise. Users write
// against runtime/idem.
package idemimpl

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
