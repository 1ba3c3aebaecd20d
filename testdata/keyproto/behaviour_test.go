package keyproto

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func attrs(t *testing.T, keys ...string) *structpb.Struct {
	t.Helper()
	m := map[string]any{}
	for i, k := range keys {
		m[k] = float64(i)
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func event(t *testing.T) Event {
	return Event{ID: "e1", At: timestamppb.New(time.Unix(100, 5)), Attrs: attrs(t, "a", "b", "c", "d", "e", "f"), Delay: durationpb.New(time.Second)}
}

func TestProtoKeys(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	// Equal messages built afresh (maps filled in another order): one run.
	for range 3 {
		if _, err := api.Record(ctx, event(t)); err != nil {
			t.Fatal(err)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("equal messages ran %d times", n)
	}
	mods := []func(*Event){
		func(e *Event) { e.At = timestamppb.New(time.Unix(100, 6)) },
		func(e *Event) { e.At = nil },
		func(e *Event) { e.At = &timestamppb.Timestamp{} }, // empty, not nil
		func(e *Event) { e.Attrs.Fields["a"] = structpb.NewStringValue("x") },
		func(e *Event) { e.Attrs = attrs(t, "a", "b") },
		func(e *Event) { e.Delay = durationpb.New(2 * time.Second) },
		func(e *Event) { e.ID = "e2" },
	}
	for i, m := range mods {
		e := event(t)
		m(&e)
		if _, err := api.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
		if n := runs.Load(); n != int64(i+2) {
			t.Fatalf("modification %d did not change the key", i)
		}
	}
}

func TestProtoInterface(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	runs.Store(0)
	api.Apply(ctx, timestamppb.New(time.Unix(1, 0)))
	api.Apply(ctx, timestamppb.New(time.Unix(1, 0)))
	api.Apply(ctx, nil)
	api.Apply(ctx, nil)
	api.Apply(ctx, durationpb.New(time.Second)) // the same bytes as the timestamp (seconds=1), another message type
	if n := runs.Load(); n != 3 {
		t.Fatalf("ran %d times, want 3 (the message type is part of the key)", n)
	}
}

func TestProtoKeyPath(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	runs.Store(0)
	e := event(t)
	api.Patch(ctx, e)
	e2 := event(t)
	e2.ID = "other"
	if _, err := api.Patch(ctx, e2); !errors.Is(err, idem.ErrPayloadMismatch) {
		t.Fatalf("same Attrs, other payload: got %v, want ErrPayloadMismatch", err)
	}
	e.Attrs = attrs(t, "z")
	api.Patch(ctx, e)
	if n := runs.Load(); n != 2 {
		t.Fatalf("ran %d times, want 2", n)
	}
}
