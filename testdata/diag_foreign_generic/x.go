// Package p tries to wrap another package's generic functions (only an
// instance can be named) and methods of an instance of its generic type:
// refused, with the advice to wrap the call in a function of p.
package p

import (
	"context"

	"github.com/idemgen/idemgen/testdata/diag_foreign_generic/sdk"
)

//idem:ttl=1h
var _ = sdk.Map[int]

//idem:ttl=1h
var _ = sdk.Pair[string, int]

//idem:ttl=1h
var _ = (*sdk.Box[int]).Put

//idem:ttl=1h
var _ = sdk.Box[string].Get

// Put is what the advice asks for: p's own generic function, wrapped as
// IdempotentPut (this case's diagnostics are about the var directives).
//
//idem:ttl=1h
func Put[T ~int | ~int64](ctx context.Context, b *sdk.Box[T], v T) error { return b.Put(ctx, v) }

//idem:ttl=1h
var _ = (*sdk.Store).Save

// Store is generic: its wrapper IdempotentStore would be the wrapper type
// of sdk.Store's methods.
//
//idem:ttl=1h
func Store[K ~string](ctx context.Context, key K) error { return nil }
