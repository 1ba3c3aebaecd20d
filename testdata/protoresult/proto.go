// Package protoresult returns protobuf messages (well-known types): they
// are stored by proto.Marshal, deterministic, and read by proto.Unmarshal.
package protoresult

import (
	"context"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

var runs atomic.Int64

// Event holds messages by pointer, as generated code does.
type Event struct {
	ID    string
	At    *timestamppb.Timestamp
	Attrs *structpb.Struct
	None  *structpb.Struct
}

// Record returns an event and a bare message.
//
//idem:ttl=1h
func Record(ctx context.Context, id string) (*Event, *timestamppb.Timestamp, error) {
	runs.Add(1)
	attrs, err := structpb.NewStruct(map[string]any{"n": 1.5, "tags": []any{"a", "b"}, "ok": true, "nested": map[string]any{"x": nil}})
	if err != nil {
		return nil, nil, err
	}
	at := timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC))
	return &Event{ID: id, At: at, Attrs: attrs}, timestamppb.New(time.Unix(1, 2)), nil
}
