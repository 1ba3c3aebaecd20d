package p

import (
	"context"

	"github.com/idemgen/idemgen/testdata/diag_generic_instance/sdk"
)

type Request struct {
	Customer string
	Limit    sdk.Opt[int64]
}

// Create keys an instance of another package's generic type with
// unexported fields: refused, with advice.
//
//idem:ttl=1h
func Create(ctx context.Context, req Request) error { return nil }

// Opt is this package's own: keyable, but its unexported fields cannot be
// stored.
type Opt[T comparable] struct {
	value   T
	present bool
}

// Get returns an instance whose unexported fields hold data.
//
//idem:ttl=1h
func Get(ctx context.Context, id string) (Opt[string], error) { return Opt[string]{}, nil }
