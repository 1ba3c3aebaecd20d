// Package sdk is a payments-SDK-style client (written for this test): every
// resource embeds the transport metadata of the call that fetched it,
// tagged json:"-".
package sdk

import "net/http"

// APIResponse is the raw response a resource came with.
type APIResponse struct {
	StatusCode int
	Header     http.Header
	RequestID  string
	raw        []byte // the body as received: not replayed
}

// NewAPIResponse builds a response with a raw body.
func NewAPIResponse(status int, id string, raw []byte) *APIResponse {
	return &APIResponse{StatusCode: status, RequestID: id, Header: http.Header{"Request-Id": {id}}, raw: raw}
}

// Raw returns the body as received.
func (r *APIResponse) Raw() []byte { return r.raw }

// APIResource is embedded by every resource.
type APIResource struct {
	LastResponse *APIResponse `json:"-"`
}

// Refund is one refund of a charge.
type Refund struct {
	ID     string `json:"id"`
	Amount int64  `json:"amount"`
}

// Charge is a card charge.
type Charge struct {
	APIResource
	ID       string            `json:"id"`
	Amount   int64             `json:"amount"`
	Currency string            `json:"currency"`
	Captured bool              `json:"captured"`
	Refunds  []*Refund         `json:"refunds,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Outcome  *Outcome          `json:"outcome,omitempty"`
}

// Outcome is the network's verdict.
type Outcome struct {
	Type      string  `json:"type"`
	RiskScore float64 `json:"risk_score"`
}
