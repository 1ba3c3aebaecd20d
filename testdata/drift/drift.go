// Package drift: the key code reads the fields of Req, of the embedded
// Base and of another package's Options, and converts Cents, Code, Codes,
// Units and ext.Level to the runtime's basic types (the result codec Rate
// too); the generated file checks at compile time that none of them
// changed since generation.
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

type (
	Cents int64
	Code  string
	Codes []int32
	Units = int32
	Rate  float32
)

type Req struct {
	Base
	ID     string
	Count  int
	Opts   ext.Options
	Note   string `idem:"-"`
	Amount Cents
	Code   Code
	Codes  Codes
	Units  Units
	Level  ext.Level
}

// Price is stored by the generated codec.
type Price struct {
	Total Cents
	Rate  Rate
}

// Charge runs once per request.
//
//idem:ttl=1h
func Charge(ctx context.Context, req Req) (int64, error) {
	return runs.Add(1), nil
}

// Quote prices an amount.
//
//idem:ttl=1h
func Quote(ctx context.Context, amount Cents, units Units) (Price, error) {
	return Price{Total: amount * Cents(units), Rate: 1.25}, nil
}
