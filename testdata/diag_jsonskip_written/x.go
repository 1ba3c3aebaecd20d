// Package p takes requests whose json:"-" fields a MarshalJSON of their
// package writes (the type's own, or that of a type holding it): such a
// field may be the request, so it is refused, not left out of the key.
package p

import (
	"context"

	"github.com/idemgen/idemgen/testdata/diag_jsonskip_written/sdk"
)

//idem:ttl=1h
func Send(ctx context.Context, r sdk.RawParams) error { return nil }

//idem:ttl=1h
func SendInner(ctx context.Context, in sdk.Inner) error { return nil }
