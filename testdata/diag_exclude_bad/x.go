package p

import "context"

type Req struct {
	ID   string
	Meta Meta
}
type Meta struct{ Trace string }

// F excludes a missing field, a path twice over, and a key path.
//
//idem:key=req.ID exclude=req.Mta,req.Meta,req.Meta.Trace,req.ID
func F(ctx context.Context, req Req) error { return nil }
