package unions

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/idemgen/idemgen/runtime/idem"

	"github.com/idemgen/idemgen/testdata/unions/blocks"
)

// A replay of another package's message restores each block as the type
// it was, nested blocks and nil included.
func TestReplayedBlocks(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			api := NewIdempotent(ng.g)
			before := blocks.Posts
			first, err := api.Post(ctx, "c-"+t.Name(), "hello")
			if err != nil {
				t.Fatal(err)
			}
			replay, err := api.Post(ctx, "c-"+t.Name(), "hello")
			if err != nil {
				t.Fatal(err)
			}
			if n := blocks.Posts - before; n != 1 {
				t.Fatalf("ran %d times, want 1", n)
			}
			if diff := cmp.Diff(first, replay); diff != "" {
				t.Errorf("replay (-first +replay):\n%s", diff)
			}
			if _, ok := replay.Blocks[1].(*blocks.Divider); !ok {
				t.Errorf("block 1 replayed as %T", replay.Blocks[1])
			}
		})
	}
}

// This package's own union: restored as its types; a value of a type its
// codec cannot restore fails the recording, loudly, and a duplicate gets
// that failure without running.
func TestReplayedEvents(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			api := NewIdempotent(ng.g)
			before := runs.Load()
			id := "e-" + t.Name()
			first, err := api.History(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			replay, err := api.History(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(first, replay); diff != "" {
				t.Errorf("replay (-first +replay):\n%s", diff)
			}
			got, err := api.History(ctx, "odd")
			if !errors.Is(err, idem.ErrResultNotEncodable) || len(got) != 4 {
				t.Errorf("an unrestorable event: %v, %v; want the events and ErrResultNotEncodable", got, err)
			}
			if _, err := api.History(ctx, "odd"); !errors.Is(err, idem.ErrResultNotEncodable) {
				t.Errorf("duplicate: %v, want the recorded ErrResultNotEncodable", err)
			}
			if n := runs.Load() - before; n != 2 {
				t.Errorf("ran %d times, want 2", n)
			}
		})
	}
}

// A union parameter is keyed by its dynamic type and value; a type its
// key code does not list is ErrInvalidKey before anything runs.
func TestUnionKey(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			api := NewIdempotent(ng.g)
			id := "k-" + t.Name()
			before := runs.Load()
			for range 2 {
				for _, e := range []Event{Created{ID: id}, &Created{ID: id}, &Deleted{ID: id}, &Deleted{ID: id, Reason: "x"}, nil} {
					if _, err := api.Notify(ctx, e); err != nil {
						t.Fatal(err)
					}
				}
			}
			if n := runs.Load() - before; n != 5 {
				t.Errorf("ran %d times for five events, want 5", n)
			}
			if _, err := api.Notify(ctx, Hooked{}); !errors.Is(err, idem.ErrInvalidKey) {
				t.Errorf("an unkeyable event: %v, want ErrInvalidKey", err)
			}
			if n := runs.Load() - before; n != 5 {
				t.Errorf("the unkeyable event ran")
			}
		})
	}
}
