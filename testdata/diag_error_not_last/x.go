package p

import "context"

// F returns its error first.
//
//idem:ttl=1h
func F(ctx context.Context) (error, int) { return nil, 0 }
