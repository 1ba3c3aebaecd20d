package p

import (
	"context"
	"fmt"
	"io"
)

type Req struct {
	ID   string
	Body io.Reader
	Name fmt.Stringer
}

// F keys on an io.Reader field.
//
//idem:ttl=1h
func F(ctx context.Context, req *Req) error { return nil }

// G keys on an interface parameter (an any would be keyed by its dynamic value).
//
//idem:ttl=1h
func G(ctx context.Context, v fmt.Stringer) error { return nil }
