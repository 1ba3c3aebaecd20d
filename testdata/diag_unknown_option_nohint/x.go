package p

import "context"

// F has an option nothing resembles.
//
//idem:frobnicate=yes
func F(ctx context.Context, id string) error { return nil }
