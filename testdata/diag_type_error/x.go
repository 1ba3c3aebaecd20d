package p

import "context"

// F does not compile.
//
//idem:ttl=1h
func F(ctx context.Context, id Missing) error { return nil }
