package p

import "context"

type Res struct{ A, B string }

// F omits a result it does not have and a field its result does not have.
//
//idem:ttl=1h omit=r3,r1.Nope
func F(ctx context.Context) (Res, int, error) { return Res{}, 0, nil }

// G has no result to omit.
//
//idem:ttl=1h omit=r1
func G(ctx context.Context) error { return nil }
