package p

import (
	"context"
	"iter"
)

// F's sequence carries no error; G's channel is not receive-only; H
// streams from a step.
//
//idem:ttl=1h
func F(ctx context.Context) (iter.Seq2[int, string], error) { return nil, nil }

//idem:ttl=1h
func G(ctx context.Context) (chan int, error) { return nil, nil }

//idem:step
func H(ctx context.Context) (iter.Seq[int], error) { return nil, nil }
