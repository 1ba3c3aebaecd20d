package recursiveresult

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

func TestRecursiveResults(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		n        int
		ring     bool
		fan      bool
		storable bool
	}{
		{"a chain replays equal", 100, false, false, true},
		{"a chain at the depth bound", idemimpl.MaxDepth, false, false, true},
		{"a chain past the depth bound", idemimpl.MaxDepth + 1, false, false, false},
		{"a ring", 3, true, false, false},
		{"a cycle by many paths", 40, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := NewIdempotent(newGuard(t))
			before := runs.Load()
			start := time.Now()
			first, err := api.Chain(ctx, tc.n, tc.ring, tc.fan)
			if took := time.Since(start); took > 10*time.Second {
				t.Fatalf("the first call took %v", took)
			}
			replay, rerr := api.Chain(ctx, tc.n, tc.ring, tc.fan)
			if n := runs.Load() - before; n != 1 {
				t.Fatalf("ran %d times, want 1", n)
			}
			if tc.storable {
				if err != nil || rerr != nil {
					t.Fatalf("calls = %v, %v", err, rerr)
				}
				if diff := cmp.Diff(first, replay); diff != "" {
					t.Fatalf("replay differs (-first +replay):\n%s", diff)
				}
				return
			}
			if !errors.Is(err, idem.ErrResultNotEncodable) || first == nil {
				t.Fatalf("first call = %v, %v; want its value and ErrResultNotEncodable", first != nil, err)
			}
			var rec *idem.RecordedError
			if !errors.As(rerr, &rec) || !errors.Is(rerr, idem.ErrResultNotEncodable) {
				t.Fatalf("duplicate = %v; want the recorded failure", rerr)
			}
		})
	}
}
