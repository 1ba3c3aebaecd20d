// Package keyproto keys protobuf messages (the well-known types of
// google.golang.org/protobuf) by their deterministic wire encoding: the
// messages' unexported state is not read, map entries are sorted.
package keyproto

import (
	"context"
	"sync/atomic"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

var runs atomic.Int64

// Event carries messages by pointer, as generated code does.
type Event struct {
	ID    string
	At    *timestamppb.Timestamp
	Attrs *structpb.Struct
	Delay *durationpb.Duration
}

// Record stores an event.
//
//idem:ttl=1h
func Record(ctx context.Context, ev Event) (int64, error) {
	return runs.Add(1), nil
}

// Apply takes any message; the key is its deterministic encoding (and a
// nil message is a key of its own).
//
//idem:ttl=1h
func Apply(ctx context.Context, m proto.Message) (int64, error) {
	return runs.Add(1), nil
}

// Patch is keyed by one message path.
//
//idem:key=ev.Attrs
func Patch(ctx context.Context, ev Event) (int64, error) {
	return runs.Add(1), nil
}
