package options

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/memstore"
)

func TestOptions(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	keys := make(chan string, 100)
	obs := idem.ObserverFunc(func(e idem.Event) {
		if e.Key != "" {
			keys <- e.Key
		}
	})
	api := NewIdempotent(idem.NewGuard(store, idem.WithObserver(obs)))
	done := make(chan int64)
	go func() {
		n, err := api.Slow(ctx, "a", "first")
		if err != nil {
			t.Error(err)
		}
		done <- n
	}()
	for runs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// wait=20ms: the duplicate waits, then gives up with ErrInProgress.
	start := time.Now()
	_, err := api.Slow(ctx, "a", "first")
	if !errors.Is(err, idem.ErrInProgress) || time.Since(start) < 20*time.Millisecond {
		t.Errorf("waiting duplicate: %v after %v", err, time.Since(start))
	}
	close(Gate)
	first := <-done
	// exclude=note: a different note is the same call, replayed.
	n, err := api.Slow(ctx, "a", "second")
	if err != nil || n != first {
		t.Errorf("replay: %d %v, want %d", n, err, first)
	}
	// name= and version= shape the store key; on_failure and ttl live in the record.
	key := <-keys
	if !strings.HasPrefix(key, "idem:options.slow:v3:") {
		t.Errorf("store key %q, want prefix idem:options.slow:v3:", key)
	}
	if _, err := api.Raise(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Raise(ctx, 1); !errors.Is(err, idem.ErrDuplicate) {
		t.Errorf("on_duplicate=raise: %v", err)
	}
}
