package streamseq

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The first call streams the items, a duplicate replays them (collect
// and errIs are in the behaviour helpers); an error ends the stream.
func TestStream(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, text string
		want       []string
		wantErr    string
	}{
		{"items", "one two three", []string{"one", "two", "three"}, ""},
		{"error ends the stream", "", nil, "no text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewIdempotent(newGuard(t))
			before := runs.Load()
			for i := 0; i < 2; i++ {
				seq, err := w.Words(ctx, tc.text)
				if err != nil {
					t.Fatal(err)
				}
				got, err := collect(seq)
				if diff := cmp.Diff(tc.want, got); diff != "" || !errIs(err, tc.wantErr) {
					t.Errorf("call %d: err %v, want %q; items (-want +got):\n%s", i+1, err, tc.wantErr, diff)
				}
			}
			if n := runs.Load() - before; tc.wantErr == "" && n != 1 {
				t.Errorf("Words ran %d times, want 1 (the duplicate replays)", n)
			}
		})
	}
}
