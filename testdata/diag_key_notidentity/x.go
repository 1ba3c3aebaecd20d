// Package p names a context field and functional options in key=: they
// are left out of the default key, and keying them stays an error.
package p

import "context"

type Params struct {
	Context context.Context
	ID      string
}

type Options struct{ Region string }

// F keys on the context inside its params.
//
//idem:key=p.Context,p.ID
func F(ctx context.Context, p Params) error { return nil }

// G keys on its options.
//
//idem:key=p.ID,opts
func G(ctx context.Context, p Params, opts ...func(*Options)) error { return nil }
