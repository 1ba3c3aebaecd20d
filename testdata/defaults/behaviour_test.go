package defaults

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/idemgen/idemgen/runtime/idem"
)

func TestDefaults(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	first, err := api.GetQuote(ctx, "ACME", 3)
	if err != nil {
		t.Fatal(err)
	}
	replay, err := api.GetQuote(ctx, "ACME", 3)
	if err != nil {
		t.Fatal(err)
	}
	// The empty (non-nil) Tags slice survives the JSON round trip.
	if diff := cmp.Diff(first, replay); diff != "" {
		t.Errorf("replay differs: %s", diff)
	}
	if _, err := api.GetQuote(ctx, "ACME", 4); err != nil { // every parameter is key
		t.Fatal(err)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("ran %d times, want 2", n)
	}

	// on_duplicate=return (the default): a duplicate of a running call gets ErrInProgress.
	block.Store(true)
	done := make(chan error)
	go func() {
		_, err := api.GetQuote(ctx, "SLOW", 1)
		done <- err
	}()
	for runs.Load() != 3 {
		time.Sleep(time.Millisecond)
	}
	if _, err := api.GetQuote(ctx, "SLOW", 1); !errors.Is(err, idem.ErrInProgress) {
		t.Errorf("duplicate while running: got %v, want ErrInProgress", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
