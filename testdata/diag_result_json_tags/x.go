package p

import "context"

type Res struct {
	ID    string
	Cache string   `json:"-"`
	Items []string `json:"items,omitempty"`
}

// F returns a field JSON skips and an omitempty slice.
//
//idem:ttl=1h
func F(ctx context.Context) (Res, error) { return Res{}, nil }
