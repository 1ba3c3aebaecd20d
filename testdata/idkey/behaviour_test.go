package idkey

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
)

func TestIDKey(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	ev := Event{ID: "e1", Kind: "paid", Payload: []byte("{}")}
	a, _ := api.Handle(ctx, "key-1", ev)
	b, _ := api.Handle(ctx, "key-1", ev)
	if a != b {
		t.Fatalf("replay: %d != %d", a, b)
	}
	ev2 := ev
	ev2.Kind = "refunded"
	if _, err := api.Handle(ctx, "key-1", ev2); !errors.Is(err, idem.ErrPayloadMismatch) {
		t.Errorf("same key, other payload: %v", err)
	}
	for _, bad := range []string{"", strings.Repeat("k", 256)} {
		if _, err := api.Handle(ctx, bad, ev); !errors.Is(err, idem.ErrInvalidKey) {
			t.Errorf("key of %d bytes: got %v, want ErrInvalidKey", len(bad), err)
		}
	}
	if _, err := api.Handle(ctx, strings.Repeat("k", 255), ev); err != nil {
		t.Errorf("255-byte key: %v", err)
	}
	x, _ := api.HandleEvent(ctx, &TypedEvent{ID: "t1", Body: "b"})
	y, _ := api.HandleEvent(ctx, &TypedEvent{ID: "t1", Body: "b"})
	if x != y {
		t.Errorf("replay through pointer: %d != %d", x, y)
	}
	if _, err := api.HandleEvent(ctx, nil); !errors.Is(err, idem.ErrInvalidKey) {
		t.Errorf("nil event: got %v, want ErrInvalidKey (no ID)", err)
	}
}
