// Package missing was never generated.
package missing

import "context"

/* want `idem_gen.go is missing: run go generate` */ //idem:ttl=2h
func Send(ctx context.Context, to string) error {    // want Send:"annotated"
	return nil
}
