// Package p: result structs that embed a type with a marshaling pair. The
// promoted pair marshals the embedded field alone, so the struct is stored
// by its fields: Name, Source and Label replay too.
package p

import (
	"context"
	"encoding/json"
	"math/big"
	"net/netip"
	"time"
)

// Tagged embeds a JSON document.
type Tagged struct {
	json.RawMessage
	Name string
}

// Stamp embeds a time.
type Stamp struct {
	time.Time
	Source string
}

// Located embeds an address.
type Located struct {
	netip.Addr
	Label string
}

// Amount embeds a big.Float, by pointer.
type Amount struct {
	*big.Float
	Currency string
}

// Res holds one of each.
type Res struct {
	Tagged  Tagged
	Stamp   Stamp
	Located Located
	Amount  Amount
}

// Get returns its argument.
//
//idem:ttl=1h
func Get(ctx context.Context, id string) (Res, error) {
	return Res{
		Tagged:  Tagged{RawMessage: json.RawMessage(`{"a":1}`), Name: id},
		Stamp:   Stamp{Time: time.Date(2024, 5, 6, 7, 8, 9, 10, time.UTC), Source: "clock"},
		Located: Located{Addr: netip.MustParseAddr("192.0.2.1"), Label: "edge"},
		Amount:  Amount{Float: big.NewFloat(10.5), Currency: "EUR"},
	}, nil
}
