package p

import "context"

// F has an empty element in key=.
//
//idem:key=a,,b
func F(ctx context.Context, a, b string) error { return nil }
