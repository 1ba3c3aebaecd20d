// Package marshaljsononly returns types with MarshalJSON but no
// UnmarshalJSON (an API's output format): encoding/json could not read
// them back; the generated codec stores their exported fields.
package marshaljsononly

import (
	"context"
	"encoding/json"
	"sync/atomic"
)

var runs atomic.Int64

// Amount renders itself as a string in JSON.
type Amount struct {
	Units    int64
	Currency string
}

// MarshalJSON writes "12.50 EUR"-style text, which cannot be read back.
func (a Amount) MarshalJSON() ([]byte, error) {
	return json.Marshal(a.Currency)
}

// Invoice holds amounts.
type Invoice struct {
	Total Amount
	Lines []Amount `json:"lines,omitempty"`
}

// MarshalJSON flattens the invoice.
func (i *Invoice) MarshalJSON() ([]byte, error) { return json.Marshal(i.Total) }

// Bill returns an invoice.
//
//idem:ttl=1h
func Bill(ctx context.Context, id string) (*Invoice, error) {
	runs.Add(1)
	return &Invoice{Total: Amount{Units: 1250, Currency: "EUR"}, Lines: []Amount{}}, nil
}
