package leasettl

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/memstore"
)

func TestLeaseAndTTL(t *testing.T) {
	ctx := context.Background()
	// Two guards on one store: two processes, so the second one asks the
	// store rather than its in-process table.
	store := memstore.New()
	a, b := NewIdempotent(idem.NewGuard(store)), NewIdempotent(idem.NewGuard(store))
	done := make(chan error)
	go func() {
		_, err := a.Long(ctx, "x")
		done <- err
	}()
	for runs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// Well past the 30ms lease, the owner's heartbeats still hold it.
	time.Sleep(70 * time.Millisecond)
	if _, err := b.Long(ctx, "x"); !errors.Is(err, idem.ErrInProgress) {
		t.Errorf("during a heartbeated call: got %v, want ErrInProgress", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("ran %d times, want 1", n)
	}

	first, _ := a.Short(ctx, "y")
	again, _ := b.Short(ctx, "y")
	if first != again {
		t.Fatalf("replay within ttl: %d != %d", first, again)
	}
	time.Sleep(80 * time.Millisecond)
	later, _ := b.Short(ctx, "y")
	if later == first {
		t.Errorf("after ttl the call should run again")
	}
}
