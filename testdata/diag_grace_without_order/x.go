package p

import "context"

// F has a grace window but no order.
//
//idem:grace=5m
func F(ctx context.Context, id string) error { return nil }
