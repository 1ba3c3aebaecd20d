package p

import (
	"context"
	"time"
)

type Req struct {
	UserID string
	T      time.Time
}

// F has no entity, G no time.
//
//idem:order=:req.T
func F(ctx context.Context, req Req) error { return nil }

//idem:order=req.UserID:
func G(ctx context.Context, req Req) error { return nil }
