package p

import (
	"context"
	"time"
)

type Req struct {
	UserID string
	Unix   int64
	Stamp  MyTime
}

type MyTime time.Time

// F orders by an integer and G by a defined type over time.Time.
//
//idem:key=req.UserID order=req.UserID:req.Unix
func F(ctx context.Context, req Req) error { return nil }

//idem:key=req.UserID order=req.UserID:req.Stamp
func G(ctx context.Context, req Req) error { return nil }
