package p

import (
	"context"
	"time"
)

type Req struct {
	UserID    string
	Timestamp time.Time
}

// F names a parameter that does not exist and G a field that does not.
//
//idem:order=rq.UserID:req.Timestamp
func F(ctx context.Context, req Req) error { return nil }

//idem:order=req.UserID:req.Time
func G(ctx context.Context, req Req) error { return nil }
