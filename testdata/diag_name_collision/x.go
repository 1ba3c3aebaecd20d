package p

import "context"

// Idempotent is already taken here.
type Idempotent struct{}

type Svc struct{}

// NewIdempotentSvc is taken too.
func NewIdempotentSvc() {}

// F needs Idempotent.
//
//idem:ttl=1h
func F(ctx context.Context) error { return nil }

// M needs NewIdempotentSvc.
//
//idem:ttl=1h
func (s *Svc) M(ctx context.Context) error { return nil }
