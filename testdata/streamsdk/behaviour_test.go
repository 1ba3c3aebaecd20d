package streamsdk

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The first call streams the deltas, a duplicate replays them (collect
// and errIs are in the behaviour helpers); Err ends the stream after them.
func TestStream(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, msg string
		want      []Delta
		wantErr   string
	}{
		{"items", "hi there", []Delta{{"hi", 0}, {"there", 1}}, ""},
		{"error ends the stream", "hi there!", []Delta{{"hi", 0}, {"there", 1}}, "connection reset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewIdempotent(newGuard(t))
			before := runs.Load()
			for i := 0; i < 2; i++ {
				seq, err := w.Chat(ctx, tc.msg)
				if err != nil {
					t.Fatal(err)
				}
				got, err := collect(seq)
				if diff := cmp.Diff(tc.want, got); diff != "" || !errIs(err, tc.wantErr) {
					t.Errorf("call %d: err %v, want %q; items (-want +got):\n%s", i+1, err, tc.wantErr, diff)
				}
			}
			if n := runs.Load() - before; tc.wantErr == "" && n != 1 {
				t.Errorf("Chat ran %d times, want 1 (the duplicate replays)", n)
			}
		})
	}
}
