package streamseq2

import (
	"context"
	"iter"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func collect(seq iter.Seq2[Token, error]) ([]Token, error) {
	var out []Token
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

func TestStream(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, prompt string
		want         []Token
		wantErr      string
	}{
		{"items", "a b c", []Token{{"a", 0}, {"b", 1}, {"c", 2}}, ""},
		{"error ends the stream", "a FAIL b", []Token{{"a", 0}}, "model failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewIdempotent(newGuard(t))
			before := runs.Load()
			for i := 0; i < 2; i++ { // the first call streams, the second replays or reruns
				seq, err := w.Complete(ctx, tc.prompt)
				if err != nil {
					t.Fatal(err)
				}
				got, err := collect(seq)
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("call %d: items (-want +got):\n%s", i+1, diff)
				}
				if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("call %d: err = %v, want %q", i+1, err, tc.wantErr)
				}
			}
			if n := runs.Load() - before; tc.wantErr == "" && n != 1 {
				t.Errorf("Complete ran %d times, want 1 (the duplicate replays)", n)
			}
		})
	}
}
