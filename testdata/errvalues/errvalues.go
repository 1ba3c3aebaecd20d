// Package errvalues returns results that hold values of type error: its
// own error types and another package's (broker.Produce).
package errvalues

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/idemgen/idemgen/testdata/errvalues/broker"
)

//idem:ttl=1h
var _ = broker.Produce

// NotFound is this package's error type, used by pointer.
type NotFound struct{ ID string }

func (n *NotFound) Error() string { return "not found: " + n.ID }

// ErrLocked is this package's sentinel.
var ErrLocked = errors.New("locked")

// Item is one item of a batch and its own outcome.
type Item struct {
	ID  string
	Err error
}

var runs atomic.Int64

// Lookup reports, per item, a NotFound, the sentinel, an error of no
// known type, or none; a nil *NotFound for an ID that starts with "nil:".
//
//idem:ttl=1h
func Lookup(ctx context.Context, ids []string) ([]Item, error) {
	runs.Add(1)
	out := make([]Item, len(ids))
	for i, id := range ids {
		out[i].ID = id
		if strings.HasPrefix(id, "nil:") {
			out[i].Err = (*NotFound)(nil) // a typed nil: its Error method panics
			continue
		}
		switch i % 4 {
		case 1:
			out[i].Err = &NotFound{ID: id}
		case 2:
			out[i].Err = ErrLocked
		case 3:
			out[i].Err = errors.New("no known type: " + id)
		}
	}
	return out, nil
}
