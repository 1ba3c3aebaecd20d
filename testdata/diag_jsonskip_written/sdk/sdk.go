// Package sdk is a payments SDK (written for this test) whose common
// Params hold unexported state that the SDK keeps out of its JSON
// (json:"-"), as stripe-go's Params.usage, and whose package writes
// the JSON of a type holding such a field itself (RawParams).
package sdk

import "context"

// Params is what every request of the SDK embeds.
type Params struct {
	Context        context.Context `json:"-"`
	IdempotencyKey *string
	Metadata       map[string]string
	usage          []string `json:"-"` // telemetry, never sent
}

// AddUsage records SDK telemetry.
func (p *Params) AddUsage(u string) { p.usage = append(p.usage, u) }

// ChargeParams are a charge's parameters.
type ChargeParams struct {
	Params
	Amount   *int64
	Currency *string
}

// RawParams is a request given as JSON: its json:"-" field is the
// request, which its MarshalJSON writes.
type RawParams struct {
	Kind string
	raw  []byte `json:"-"`
}

// NewRaw returns a request of the given JSON.
func NewRaw(kind string, b []byte) RawParams { return RawParams{Kind: kind, raw: b} }

// MarshalJSON writes the request as given.
func (r RawParams) MarshalJSON() ([]byte, error) { return r.raw, nil }

// Inner is held by Envelope, whose MarshalJSON can write Inner's
// json:"-" field.
type Inner struct {
	Name   string
	secret string `json:"-"`
}

// Envelope wraps an Inner.
type Envelope struct{ In []*Inner }

// MarshalJSON writes the inner values' secrets too.
func (e Envelope) MarshalJSON() ([]byte, error) { return []byte(e.In[0].secret), nil }
