// Package sdk is a payments SDK: every request embeds Params, which holds
// the request's context, the SDK's own idempotency key and metadata, and
// unexported state.
package sdk

import "context"

// Params is what every request of the SDK embeds.
type Params struct {
	Context        context.Context `json:"-"`
	IdempotencyKey *string
	Metadata       map[string]string
	extra          map[string]string
}

// SetExtra sets unexported state.
func (p *Params) SetExtra(k, v string) {
	if p.extra == nil {
		p.extra = map[string]string{}
	}
	p.extra[k] = v
}

// ChargeParams are a charge's parameters.
type ChargeParams struct {
	Params
	Amount   *int64
	Currency *string
}

// Charge is a charge.
type Charge struct {
	ID     string
	Amount int64
}
