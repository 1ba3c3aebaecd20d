// Package p: a result whose json tags would lose data under encoding/json
// (json:"-", omitempty on an empty slice and map); the generated codec
// stores every exported field whatever its tags.
package p

import "context"

type Res struct {
	ID    string
	Cache string            `json:"-"`
	Items []string          `json:"items,omitempty"`
	Tags  map[string]string `json:"tags,omitempty"`
	None  []string          `json:",omitempty"`
}

// F returns a field JSON skips and omitempty slices and maps.
//
//idem:ttl=1h
func F(ctx context.Context, id string) (Res, error) {
	return Res{ID: id, Cache: "warm", Items: []string{}, Tags: map[string]string{}}, nil
}
