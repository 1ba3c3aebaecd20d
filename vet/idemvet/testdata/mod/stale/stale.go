// Package stale's idem_gen.go is generated (at run time) from
// stale.go.before, whose ttl= differs.
package stale

import "context"

/* want `idem_gen.go is stale: it differs from what idemgen writes for these annotations now \(run go generate\)` */ //idem:ttl=2h
func Send(ctx context.Context, to string) error {                                                                    // want Send:"annotated"
	return nil
}
