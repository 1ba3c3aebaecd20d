package p

import "context"

// F gives ttl twice, on two lines.
//
//idem:ttl=1h
//idem:lease=10s ttl=2h
func F(ctx context.Context, id string) error { return nil }
