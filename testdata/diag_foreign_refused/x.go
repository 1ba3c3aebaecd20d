// Package p tries to wrap what cannot be wrapped, or not so.
package p

import (
	"context"

	"github.com/idemgen/idemgen/testdata/diag_foreign_refused/other"
	"github.com/idemgen/idemgen/testdata/diag_foreign_refused/sdk"
)

//idem:ttl=1h
var NewThing = sdk.New

//idem:ttl=1h
var _ func(context.Context, string) (string, error) = sdk.New

var client = &sdk.Client{}

//idem:ttl=1h
var _ = client.Create

//idem:ttl=1h
var _ = sdk.Handler

//idem:ttl=1h
var _ = sdk.Doer.Do

//idem:ttl=1h
var _ = Local

//idem:ttl=1h
var _ = sdk.Sum

//idem:ttl=1h
var _ = sdk.Map[int]

//idem:ttl=1h
var _ = sdk.Configure

//idem:ttl=1h
var _ = sdk.Send

//idem:ttl=1h
var _ = sdk.New

//idem:ttl=1h
var _ = other.New

//idem:ttl=1h as=Remove
var _ = (*sdk.Client).Delete

//idem:ttl=1h
var _ = (*sdk.Client).Create

//idem:on_duplicate=raise
var _ = (*sdk.Client).Create

//idem:ttl=1h
var _ = (*sdk.Store).Put

//idem:ttl=1h
var (
	_ = sdk.New
	_ = other.New
)

//idem:as=New-Thing
var _ = other.New

// Local is the package's own function.
//
//idem:ttl=1h as=Other
func Local(ctx context.Context) error { return nil }

// Store is a type of this package with the name of sdk.Store.
type Store struct{}

// Close is annotated: its wrapper type is IdempotentStore.
//
//idem:ttl=1h
func (s *Store) Close(ctx context.Context) error { return nil }
