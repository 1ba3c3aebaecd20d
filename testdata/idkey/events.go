// Package idkey: key= naming a single string is a caller-supplied ID
// (empty or over 255 bytes is rejected); the payload is fingerprinted.
package idkey

import (
	"context"
	"sync/atomic"
)

var handled atomic.Int64

type Event struct {
	ID      string
	Kind    string
	Payload []byte
}

type EventID string

// Handle processes a webhook delivery once per idempotency key.
//
//idem:key=idempotencyKey
func Handle(ctx context.Context, idempotencyKey string, ev Event) (int64, error) {
	return handled.Add(1), nil
}

// HandleEvent keys on a field of a named string type.
//
//idem:key=ev.ID name=events.handle version=2
func HandleEvent(ctx context.Context, ev *TypedEvent) (int64, error) {
	return handled.Add(1), nil
}

type TypedEvent struct {
	ID   EventID
	Body string
}
