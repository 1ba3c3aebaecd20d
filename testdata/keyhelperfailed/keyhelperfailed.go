// Package keyhelperfailed keys a union one of whose variants cannot be
// keyed, after a helper of another union (written while that variant's was
// being written) named the variant's helper: the helpers written meanwhile
// are written again, without it.
package keyhelperfailed

import (
	"context"
	"sync/atomic"

	"github.com/idemgen/idemgen/testdata/keyhelperfailed/mnet"
)

var runs atomic.Int64

// Describe is keyed by d's dynamic type and value: a Plain is keyed, a
// Connection fails the call's key.
//
//idem:ttl=1h
func Describe(ctx context.Context, d mnet.Describer) (string, error) {
	runs.Add(1)
	return d.Description(), nil
}

// Stream is keyed by a Streamer, whose helper is the one written meanwhile.
//
//idem:ttl=1h
func Stream(ctx context.Context, s mnet.Streamer) (string, error) {
	return s.Stream(), nil
}
