package p

import (
	"context"
	"time"
)

// F has a grace that is not a duration, G a bare number, H a negative one.
//
//idem:order=user:at grace=soon
func F(ctx context.Context, user string, at time.Time) error { return nil }

//idem:order=user:at grace=300
func G(ctx context.Context, user string, at time.Time) error { return nil }

//idem:order=user:at grace=-1m
func H(ctx context.Context, user string, at time.Time) error { return nil }
