package p

import "context"

// F keys on id, but the payload (every parameter) includes a map of any.
//
//idem:key=id
func F(ctx context.Context, id string, doc map[string]any) error { return nil }
