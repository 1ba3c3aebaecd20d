package variadic

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestVariadic(t *testing.T) {
	api := NewIdempotent(newGuard(t))
	a, err := api.Tag("x", "red", "big")
	if err != nil {
		t.Fatal(err)
	}
	b, err := api.Tag("x", []string{"red", "big"}...)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(a, b) || tagged.Load() != 1 {
		t.Errorf("replay: %v %v, ran %d times", a, b, tagged.Load())
	}
	// No variadic arguments and an empty slice are the same call.
	api.Tag("y")
	api.Tag("y", []string{}...)
	if n := tagged.Load(); n != 2 {
		t.Errorf("ran %d times, want 2", n)
	}
	api.Tag("x", "big", "red") // order matters
	if n := tagged.Load(); n != 3 {
		t.Errorf("ran %d times, want 3", n)
	}
	for i := 0; i < 3; i++ {
		if err := api.Log("%d", 1, 2); err != nil {
			t.Fatal(err)
		}
	}
	if n := logged.Load(); n != 1 {
		t.Errorf("logged %d times, want 1", n)
	}
}
