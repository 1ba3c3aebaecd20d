package idem

import (
	"context"
	"testing"
	"time"
)

// A function that runs longer than the write timeout (kept alive by
// heartbeats) must still get its result recorded: the bound on the
// writes after it returns counts from when it returned, not from when it
// started.
func TestWriteTimeoutCountsFromReturn(t *testing.T) {
	old := writeTimeoutFloor
	writeTimeoutFloor = 50 * time.Millisecond
	defer func() { writeTimeoutFloor = old }()

	store := NewMemoryStore()
	g := NewGuard(store)
	spec := &Spec{Name: "test.LongRun", Lease: 30 * time.Millisecond}
	c := g.Begin(spec)
	c.Key().String("long")
	got, err := Do(context.Background(), c, func(ctx context.Context) (string, error) {
		select {
		case <-time.After(300 * time.Millisecond): // 10 leases, 6 write timeouts
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
		return "done", nil
	})
	if err != nil || got != "done" {
		t.Fatalf("long call = %q, %v; want done, nil", got, err)
	}
	c = g.Begin(spec)
	c.Key().String("long")
	key, _ := KeyOf(c)
	r, err := store.Get(context.Background(), key)
	if err != nil || r.State != StateCompleted {
		t.Fatalf("record after a long call = %v, %v; want completed", r.State, err)
	}
}
