package p

import "context"

// F keys on a parameter it does not have.
//
//idem:key=requestID
func F(ctx context.Context, requestId string) error { return nil }
