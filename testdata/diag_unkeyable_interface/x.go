package p

import (
	"context"
	"io"
)

type Req struct {
	ID   string
	Body io.Reader
	Any  any
}

// F keys on an io.Reader field.
//
//idem:ttl=1h
func F(ctx context.Context, req *Req) error { return nil }

// G keys on an interface parameter.
//
//idem:ttl=1h
func G(ctx context.Context, v any) error { return nil }
