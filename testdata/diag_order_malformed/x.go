package p

import (
	"context"
	"time"
)

type Req struct {
	UserID string
	Tenant string
	T      time.Time
}

// F has no colon, G two, H a list of entities.
//
//idem:order=req.UserID
func F(ctx context.Context, req Req) error { return nil }

//idem:order=req.UserID:req.T:req.T
func G(ctx context.Context, req Req) error { return nil }

//idem:order=req.Tenant,req.UserID:req.T
func H(ctx context.Context, req Req) error { return nil }
