package p

import (
	"context"
	"iter"
)

type Event struct {
	ID   string
	Undo func()
}

// F streams items that hold a func.
//
//idem:ttl=1h
func F(ctx context.Context) (iter.Seq2[Event, error], error) { return nil, nil }
