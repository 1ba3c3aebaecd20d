// Package anyvalues holds values of type any in keys and results: the
// documents encoding/json decodes, and database-style variadic arguments.
package anyvalues

import (
	"context"
	"net"
	"sync/atomic"
)

// Event carries a decoded JSON document.
type Event struct {
	ID   string
	Data map[string]any
	Tags []any
}

// Result echoes what Record was given.
type Result struct {
	Echo  map[string]any
	Items []any
	V     any
}

var runs atomic.Int64

// Record keys on the whole event, documents included.
//
//idem:ttl=1h
func Record(ctx context.Context, e Event) (Result, error) {
	runs.Add(1)
	return Result{Echo: e.Data, Items: e.Tags, V: e.Data["v"]}, nil
}

// Exec keys on its query and arguments, and returns the first argument.
//
//idem:ttl=1h
func Exec(ctx context.Context, query string, args ...any) (any, error) {
	runs.Add(1)
	if len(args) == 0 {
		return nil, nil
	}
	return args[0], nil
}

// Connect keys on an address: its network and its string form.
//
//idem:ttl=1h
func Connect(ctx context.Context, addr net.Addr) (string, error) {
	runs.Add(1)
	if addr == nil {
		return "none", nil
	}
	return addr.Network() + " " + addr.String(), nil
}
