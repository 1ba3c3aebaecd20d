package streamchan

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The first call streams the ticks, a duplicate replays them (collect
// and errIs are in the behaviour helpers); an error ends the stream.
func TestStream(t *testing.T) {
	ctx := context.Background()
	at := func(i int64) time.Time { return time.Unix(i, 0).UTC() }
	for _, tc := range []struct {
		name    string
		n       int
		want    []Tick
		wantErr string
	}{
		{"items", 3, []Tick{{0, at(0)}, {1, at(1)}, {2, at(2)}}, ""},
		{"error ends the stream", -1, nil, "negative count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewIdempotent(newGuard(t))
			before := runs.Load()
			for i := 0; i < 2; i++ {
				seq, err := w.Ticks(ctx, tc.n)
				if err != nil {
					t.Fatal(err)
				}
				got, err := collect(seq)
				if diff := cmp.Diff(tc.want, got); diff != "" || !errIs(err, tc.wantErr) {
					t.Errorf("call %d: err %v, want %q; items (-want +got):\n%s", i+1, err, tc.wantErr, diff)
				}
			}
			if n := runs.Load() - before; tc.wantErr == "" && n != 1 {
				t.Errorf("Ticks ran %d times, want 1 (the duplicate replays)", n)
			}
		})
	}
}
