// Package jsonskipkeys wraps a function that takes an SDK's parameters
// with the plain annotation: the SDK's unexported field that it keeps out
// of its JSON (json:"-") is not keyed, and the doc line says so.
package jsonskipkeys

import (
	"context"
	"sync/atomic"

	"github.com/idemgen/idemgen/testdata/jsonskipkeys/sdk"
)

var runs atomic.Int64

// Charge charges a card.
//
//idem:ttl=1h
func Charge(ctx context.Context, p *sdk.ChargeParams) (string, error) {
	return "ch_" + string(rune('0'+runs.Add(1))), nil
}
