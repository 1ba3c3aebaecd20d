package p

import "context"

// F sets wait= but does not wait.
//
//idem:on_duplicate=raise wait=5s
func F(ctx context.Context, id string) error { return nil }
