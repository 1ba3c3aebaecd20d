package keyer

import (
	"context"
	"testing"
)

func TestKeyer(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	o := Order{To: NewEmail("A@x.io"), Cart: Cart{Items: []string{"a", "b"}, note: "n"}}
	api.Notify(ctx, o, User{"u"}, nil)
	o2 := Order{To: NewEmail("a@X.IO"), Cart: Cart{Items: []string{"b", "a"}, note: "other"}}
	api.Notify(ctx, o2, User{"u"}, nil)
	if n := runs.Load(); n != 1 {
		t.Fatalf("IdemKey ignored: ran %d times", n)
	}
	api.Notify(ctx, o2, nil, nil) // a nil interface is its own key
	cc := NewEmail("c@x.io")
	api.Notify(ctx, o2, nil, &cc)
	if n := runs.Load(); n != 3 {
		t.Fatalf("ran %d times, want 3", n)
	}
}
