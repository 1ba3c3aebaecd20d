package streamsdk

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

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
				var got []Delta
				var gotErr error
				for v, err := range seq {
					if err != nil {
						gotErr = err
						break
					}
					got = append(got, v)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("call %d: items (-want +got):\n%s", i+1, diff)
				}
				if (gotErr == nil) != (tc.wantErr == "") || gotErr != nil && !strings.Contains(gotErr.Error(), tc.wantErr) {
					t.Errorf("call %d: err = %v, want %q", i+1, gotErr, tc.wantErr)
				}
			}
			if n := runs.Load() - before; tc.wantErr == "" && n != 1 {
				t.Errorf("Chat ran %d times, want 1 (the duplicate replays)", n)
			}
		})
	}
}
