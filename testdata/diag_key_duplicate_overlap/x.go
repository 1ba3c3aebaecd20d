package p

import "context"

type Req struct{ ID string }

// F lists a path twice and a path inside another.
//
//idem:key=req.ID,req.ID
func F(ctx context.Context, req Req) error { return nil }

//idem:key=req,req.ID
func G(ctx context.Context, req Req) error { return nil }
