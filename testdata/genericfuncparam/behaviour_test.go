package genericfuncparam

import (
	"context"
	"testing"
)

// The type argument keys the call: ForEach[ServiceSpec] and
// ForEach[WorkerSpec] over one spec are two calls, fn is none of the key.
func TestTypeArgumentKeys(t *testing.T) {
	api := NewIdempotent(newGuard(t))
	s := &AppSpec{Name: "app"}
	for range 2 {
		if err := IdempotentForEach(api, s, func(ServiceSpec) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := IdempotentForEach(api, s, func(WorkerSpec) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("ran %d times, want 2 (one per type argument)", n)
	}
	k1, _ := IdempotentForEachKey(api, s, func(ServiceSpec) error { return nil })
	k2, _ := IdempotentForEachKey(api, s, func(WorkerSpec) error { return nil })
	if k1 == k2 {
		t.Fatalf("two type arguments share the key %q", k1)
	}
	if err := NewIdempotentRepo(&Repo[int]{}, newGuard(t)).Each(context.Background(), func(int) error { return nil }); err != nil {
		t.Fatal(err)
	}
}
