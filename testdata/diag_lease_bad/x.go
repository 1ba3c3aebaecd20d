package p

import "context"

// F gives lease in bare seconds, which only ttl accepts.
//
//idem:lease=30
func F(ctx context.Context, id string) error { return nil }

// G has a lease below a millisecond.
//
//idem:lease=10us
func G(ctx context.Context, id string) error { return nil }
