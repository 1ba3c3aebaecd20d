package p

import (
	"context"
	"io"
	"sync"
	"time"
)

type Inner struct {
	Mu   sync.Mutex
	Body io.Reader
	N    int
}

type Trace struct {
	SentAt time.Time
	mu     sync.Mutex
}

type Req struct {
	ID      string
	Client  io.Closer
	OnDone  func()
	A, B, C Inner
	Items   []Inner
	ByName  map[string]*Inner
	Trace   Trace
}

// F reaches sync.Mutex six times and io.Reader five: one line for each
// type, every path counted, and an exclude= that lifts them all, merged
// with the exclude= already given.
//
//idem:ttl=1h exclude=req.ID
func F(ctx context.Context, req Req, cb func(int)) error { return nil }

// H keys on a path with unkeyable fields: exclude= cannot lift those.
//
//idem:key=req.A
func H(ctx context.Context, req Req) error { return nil }
