package streamchan

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestStream(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		n       int
		want    []Tick
		wantErr string
	}{
		{"items", 3, []Tick{{0, time.Unix(0, 0).UTC()}, {1, time.Unix(1, 0).UTC()}, {2, time.Unix(2, 0).UTC()}}, ""},
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
				var got []Tick
				for v, err := range seq {
					if err != nil {
						if tc.wantErr == "" || !strings.Contains(err.Error(), tc.wantErr) {
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
				t.Errorf("Ticks ran %d times, want 1 (the duplicate replays)", n)
			}
		})
	}
}
