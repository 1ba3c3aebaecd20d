// Package overlap follows two rounds of advice at once: exclude= and omit=
// paths under another path of the same option are merged into it, in
// either order, never refused.
package overlap

import (
	"context"
	"sync/atomic"
)

var runs atomic.Int64

// Params is what every call of an SDK carries.
type Params struct {
	Context context.Context
	Trace   string
}

// ChargeParams embeds the common params.
type ChargeParams struct {
	Params
	Amount int64
}

// Receipt is a charge's result.
type Receipt struct {
	ID   string
	Meta Meta
}

// Meta is transport metadata.
type Meta struct {
	RequestID string
	Raw       string
}

// Charge names the shorter paths first.
//
//idem:exclude=p.Params,p.Params.Context omit=r1.Meta,r1.Meta.Raw
func Charge(ctx context.Context, p ChargeParams) (*Receipt, error) {
	return charge(p), nil
}

// Refund names the longer paths first, the excluded one through its promotion.
//
//idem:exclude=p.Context,p.Params omit=r1.Meta.Raw,r1.Meta
func Refund(ctx context.Context, p ChargeParams) (*Receipt, error) {
	return charge(p), nil
}

func charge(p ChargeParams) *Receipt {
	n := runs.Add(1)
	return &Receipt{ID: "ch_" + string(rune('0'+n)), Meta: Meta{RequestID: p.Trace, Raw: "raw"}}
}
