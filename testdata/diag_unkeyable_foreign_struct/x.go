package p

import (
	"context"
	"strings"
	"sync"
)

type Req struct {
	ID string
	Mu sync.Mutex
}

// F keys on a struct with unexported fields from another package.
//
//idem:ttl=1h
func F(ctx context.Context, req *Req) error { return nil }

// G keys on a strings.Builder.
//
//idem:ttl=1h
func G(ctx context.Context, b *strings.Builder) error { return nil }
