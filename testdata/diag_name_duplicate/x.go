package p

import "context"

// Charge and Refund were given one name by mistake: their calls would
// share a key space.
//
//idem:name=billing.charge
func Charge(ctx context.Context, id string) (string, error) { return id, nil }

// Refund reuses Charge's name.
//
//idem:ttl=1h name=billing.charge
func Refund(ctx context.Context, id string) (string, error) { return id, nil }

type Svc struct{}

// Take claims the default name of Svc.Put (import path, type, method).
//
//idem:name=github.com/idemgen/idemgen/testdata/diag_name_duplicate.Svc.Put
func Take(ctx context.Context, id string) error { return nil }

// Put keeps its default name.
//
//idem:ttl=1h
func (s *Svc) Put(ctx context.Context, id string) error { return nil }
