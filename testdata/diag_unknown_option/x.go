package p

import "context"

// F has a misspelt option.
//
//idem:tll=1h
func F(ctx context.Context, id string) error { return nil }
