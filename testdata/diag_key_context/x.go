package p

import "context"

// F keys on its context.
//
//idem:key=ctx
func F(ctx context.Context, id string) error { return nil }
