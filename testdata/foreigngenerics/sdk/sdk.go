// Package sdk is an SDK whose (non-generic) functions and methods take
// and return instances of its generic types, as AI and cloud SDKs do
// (param.Opt[T], Page[T]).
package sdk

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
)

// Opt is an optional value: absent, or present with a value.
type Opt[T comparable] struct {
	value   T
	present bool
}

// Some is a present value.
func Some[T comparable](v T) Opt[T] { return Opt[T]{value: v, present: true} }

// Value returns the value and whether it is present.
func (o Opt[T]) Value() (T, bool) { return o.value, o.present }

// MarshalJSON writes null when absent, else the value.
func (o Opt[T]) MarshalJSON() ([]byte, error) {
	if !o.present {
		return []byte("null"), nil
	}
	return json.Marshal(o.value)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (o *Opt[T]) UnmarshalJSON(p []byte) error {
	if string(p) == "null" {
		*o = Opt[T]{}
		return nil
	}
	o.present = true
	return json.Unmarshal(p, &o.value)
}

// MarshalText is the JSON form: how the SDK spells the field in a request.
func (o Opt[T]) MarshalText() ([]byte, error) { return o.MarshalJSON() }

// Query filters a listing.
type Query[F any] struct {
	Filter F
	Limit  Opt[int64]
}

// Item is one listed item.
type Item struct {
	ID    string
	Price int64
}

// Page is one page of a listing.
type Page[T any] struct {
	Items []T
	Next  string
}

// Runs counts the calls that ran.
var Runs atomic.Int64

// List lists the items whose ID has the filter's prefix.
func List(ctx context.Context, q Query[string]) (Page[Item], error) {
	n := Runs.Add(1)
	return Page[Item]{Items: []Item{{ID: q.Filter + "-1", Price: n}}, Next: "cursor-" + strconv.FormatInt(n, 10)}, nil
}

// Catalog is a client.
type Catalog struct{ runs atomic.Int64 }

// Runs counts the calls of c's methods that ran.
func (c *Catalog) Runs() int64 { return c.runs.Load() }

// Prices returns the prices of ids.
func (c *Catalog) Prices(ctx context.Context, ids Page[string]) (map[string]Opt[int64], error) {
	c.runs.Add(1)
	out := map[string]Opt[int64]{}
	for i, id := range ids.Items {
		out[id] = Some(int64(i))
	}
	return out, nil
}
