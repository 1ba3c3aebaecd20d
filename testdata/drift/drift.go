// Package drift: the key code reads the fields of Req, of the embedded
// Base and of another package's Options; the generated file checks at
// compile time that they did not change since generation.
package drift

import (
	"context"
	"sync/atomic"

	"github.com/idemgen/idemgen/testdata/drift/ext"
)

var runs atomic.Int64

type Base struct {
	Tenant string
}

type Req struct {
	Base
	ID    string
	Count int
	Opts  ext.Options
	Note  string `idem:"-"`
}

// Charge runs once per request.
//
//idem:ttl=1h
func Charge(ctx context.Context, req Req) (int64, error) {
	return runs.Add(1), nil
}
