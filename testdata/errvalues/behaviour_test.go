package errvalues

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/testdata/errvalues/broker"
)

// texts is what every error of items says: a replay says the same.
func texts[T any](items []T, err func(T) error) []string {
	var out []string
	for _, it := range items {
		if e := err(it); e != nil {
			out = append(out, e.Error())
		} else {
			out = append(out, "<nil>")
		}
	}
	return out
}

// A replay of another package's response restores its error codes and
// sentinel as themselves, keeps what wrapped ones wrap and joined ones
// join, and every error's text.
func TestReplayedBrokerErrors(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			api := NewIdempotent(ng.g)
			topic := "orders-" + t.Name()
			before := broker.Produced
			first, err := api.Produce(ctx, topic, 5)
			if err != nil {
				t.Fatal(err)
			}
			replay, err := api.Produce(ctx, topic, 5)
			if err != nil {
				t.Fatal(err)
			}
			if n := broker.Produced - before; n != 1 {
				t.Fatalf("ran %d times, want 1", n)
			}
			text := func(p broker.Partition) error { return p.Error }
			if diff := cmp.Diff(texts(first.Partitions, text), texts(replay.Partitions, text)); diff != "" {
				t.Errorf("error texts (-first +replay):\n%s", diff)
			}
			p := replay.Partitions
			if p[0].Error != nil || p[1].Error != broker.UnknownTopic || p[3].Error != broker.ErrClosed {
				t.Errorf("codes and sentinels not restored as themselves: %#v, %#v, %#v", p[0].Error, p[1].Error, p[3].Error)
			}
			var code broker.Error
			if !errors.As(p[2].Error, &code) || code != broker.NotLeader {
				t.Errorf("the wrapped code is not found after the replay: %#v", p[2].Error)
			}
			if !errors.Is(p[4].Error, broker.MessageTooLong) {
				t.Errorf("the joined code is not found after the replay: %#v", p[4].Error)
			}
			if replay.Throttle != 5 || len(p) != 5 {
				t.Errorf("replay %+v", replay)
			}
		})
	}
}

// This package's own error types by pointer, its sentinel, and an error
// of no known type (its text) survive a replay.
func TestReplayedOwnErrors(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			api := NewIdempotent(ng.g)
			ids := []string{"a-" + t.Name(), "b", "c", "d"}
			before := runs.Load()
			first, err := api.Lookup(ctx, ids)
			if err != nil {
				t.Fatal(err)
			}
			replay, err := api.Lookup(ctx, ids)
			if err != nil {
				t.Fatal(err)
			}
			if n := runs.Load() - before; n != 1 {
				t.Fatalf("ran %d times, want 1", n)
			}
			text := func(it Item) error { return it.Err }
			if diff := cmp.Diff(texts(first, text), texts(replay, text)); diff != "" {
				t.Errorf("error texts (-first +replay):\n%s", diff)
			}
			var nf *NotFound
			if !errors.As(replay[1].Err, &nf) || nf.ID != "b" {
				t.Errorf("NotFound not restored: %#v", replay[1].Err)
			}
			if replay[2].Err != ErrLocked {
				t.Errorf("sentinel not restored: %#v", replay[2].Err)
			}
		})
	}
}

// A result holding a typed nil error (a nil *NotFound, whose Error method
// panics) is recorded, and replays as that same typed nil.
func TestReplayedTypedNilError(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			api := NewIdempotent(ng.g)
			ids := []string{"nil:" + t.Name()}
			before := runs.Load()
			for i := 0; i < 2; i++ {
				got, err := api.Lookup(ctx, ids)
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				nf, ok := got[0].Err.(*NotFound)
				if !ok || nf != nil {
					t.Errorf("call %d: Err = %#v, want (*NotFound)(nil)", i, got[0].Err)
				}
			}
			if n := runs.Load() - before; n != 1 {
				t.Errorf("ran %d times, want 1", n)
			}
		})
	}
}
