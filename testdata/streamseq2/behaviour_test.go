package streamseq2

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
			for i := 0; i < 2; i++ {
				seq, err := w.Complete(ctx, tc.prompt)
				if err != nil {
					t.Fatal(err)
				}
				got, err := collect(seq)
				if diff := cmp.Diff(tc.want, got); diff != "" || !errIs(err, tc.wantErr) {
					t.Errorf("call %d: err %v, want %q; items (-want +got):\n%s", i+1, err, tc.wantErr, diff)
				}
			}
			if n := runs.Load() - before; tc.wantErr == "" && n != 1 {
				t.Errorf("Complete ran %d times, want 1 (the duplicate replays)", n)
			}
		})
	}
}

// A method's stream: keyed on the receiver's field, replayed to a
// duplicate.
func TestMethodStream(t *testing.T) {
	ctx := context.Background()
	w := NewIdempotentModel(&Model{Name: "m1"}, newGuard(t))
	before := runs.Load()
	want := []Token{{"m1", 0}, {"hi", 1}}
	for i := 0; i < 2; i++ {
		seq, err := w.Answer(ctx, "hi")
		if err != nil {
			t.Fatal(err)
		}
		got, err := collect(seq)
		if diff := cmp.Diff(want, got); diff != "" || err != nil {
			t.Errorf("call %d: err %v; items (-want +got):\n%s", i+1, err, diff)
		}
	}
	if n := runs.Load() - before; n != 1 {
		t.Errorf("Answer ran %d times, want 1", n)
	}
}
