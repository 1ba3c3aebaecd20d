package p

import "context"

// F has a name with a colon, the store key separator.
//
//idem:name=billing:invoice
func F(ctx context.Context, id string) error { return nil }
