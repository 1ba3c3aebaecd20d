package p

import "context"

// F has a version that is not a non-negative integer.
//
//idem:version=v2
func F(ctx context.Context, id string) error { return nil }

//idem:version=-1
func G(ctx context.Context, id string) error { return nil }
