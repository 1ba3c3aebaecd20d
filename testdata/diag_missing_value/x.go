package p

import "context"

// F has options without values.
//
//idem:ttl lease= key=
func F(ctx context.Context, id string) error { return nil }
