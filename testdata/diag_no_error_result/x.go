package p

import "context"

// F returns no error.
//
//idem:ttl=1h
func F(ctx context.Context, id string) string { return id }

// G returns nothing.
//
//idem:ttl=1h
func G(ctx context.Context) {}
