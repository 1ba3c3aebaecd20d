package streamseq

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

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
				var got []string
				for v, err := range seq {
					if err != nil {
						if !strings.Contains(err.Error(), tc.wantErr) || tc.wantErr == "" {
							t.Errorf("call %d: err = %v, want %q", i+1, err, tc.wantErr)
						}
						break
					}
					got = append(got, v)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("call %d: items (-want +got):\n%s", i+1, diff)
				}
			}
			if n := runs.Load() - before; tc.wantErr == "" && n != 1 {
				t.Errorf("Words ran %d times, want 1 (the duplicate replays)", n)
			}
		})
	}
}
