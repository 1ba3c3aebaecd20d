package p

import "context"

type Req struct{ Items []Item }
type Item struct{ ID string }

// F keys through a slice.
//
//idem:key=req.Items.ID
func F(ctx context.Context, req Req) error { return nil }
