package p

import (
	"context"
	"time"
)

// F orders by a func value and reaches time through the context.
//
//idem:order=cb:at
func F(ctx context.Context, cb func(), at time.Time) error { return nil }

//idem:order=id:ctx
func G(ctx context.Context, id string) error { return nil }
