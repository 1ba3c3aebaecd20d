// Package unions returns results holding interfaces whose implementations
// are the types of their own package: another package's (blocks.Post) and
// this package's own Event.
package unions

import (
	"context"
	"sync/atomic"

	"github.com/idemgen/idemgen/testdata/unions/blocks"
)

//idem:ttl=1h
var _ = blocks.Post

// Event is one of this package's events.
type Event interface{ isEvent() }

// Created is an Event.
type Created struct{ ID string }

// Deleted is an Event.
type Deleted struct {
	ID     string
	Reason string
}

// internal is an Event whose state is unexported: no codec can restore
// it, so a result holding one cannot be recorded.
type internal struct{ n int }

// Hooked is an Event holding a func: neither keyable nor storable.
type Hooked struct{ Fn func() }

func (Hooked) isEvent()   {}
func (Created) isEvent()  {}
func (*Deleted) isEvent() {}
func (internal) isEvent() {}
func (i internal) N() int { return i.n }

var runs atomic.Int64

// History returns the events of id; "odd" ones end with an internal event.
//
//idem:ttl=1h
func History(ctx context.Context, id string) ([]Event, error) {
	runs.Add(1)
	out := []Event{Created{ID: id}, &Deleted{ID: id, Reason: "spam"}, nil, &Created{ID: "p"}}
	if id == "odd" {
		out = out[:3]
		out = append(out, internal{n: 1})
	}
	return out, nil
}

// Notify keys on an event: the same event is one call, Created and
// Deleted with one ID are two, a Created and a pointer to it are two.
//
//idem:ttl=1h
func Notify(ctx context.Context, e Event) (string, error) {
	runs.Add(1)
	if e == nil {
		return "none", nil
	}
	return "sent", nil
}
