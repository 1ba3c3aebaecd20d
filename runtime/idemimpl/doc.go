// Package idemimpl is for code that idemgen generates, not for people.
//
// Generated wrappers start their calls here (Begin), write their keys
// with KeyBuilder and encode their results with Encoder, Decoder and
// TypedCodec. Everything a person writes against (hand-written calls,
// Keyer, Store implementations, adapters) is in runtime/idem, whose
// signatures never name this package.
//
// It has no compatibility promise beyond this one: the generated code of
// an idemgen version compiles and runs against the idemimpl of the same
// version. Its identifiers may change or go in any release, as
// google.golang.org/protobuf/runtime/protoimpl's do. Most of it re-exports
// runtime/internal/impl, which runtime/idem shares.
package idemimpl

import (
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/internal/impl"
)

// begin is idem's Guard.begin (see impl.BeginCall).
var begin = impl.BeginCall.(func(*idem.Guard, *idem.Spec) (idem.Call, *Material))

// Begin starts a call of the function spec describes on g. The generated
// wrapper writes the call's key into the returned Material, then hands
// the Call to idem.Do or Call.StoreKey; the Material is not written after
// that. Its memory is the Guard's, pooled: Begin does not allocate.
func Begin(g *idem.Guard, spec *idem.Spec) (idem.Call, *Material) { return begin(g, spec) }
