package streamreader

import (
	"context"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStream(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		call    func(*Idempotent) (io.ReadCloser, error)
		want    string
		wantErr string
	}{
		{"io.ReadCloser", func(w *Idempotent) (io.ReadCloser, error) { return w.Download(ctx, "a.txt") }, "a.txt\na.txt\na.txt\n", ""},
		{"io.ReadCloser error ends the stream", func(w *Idempotent) (io.ReadCloser, error) { return w.Download(ctx, "b.broken") },
			"b.broken\nb.broken\nb.broken\n", "disk failed"},
		{"io.Reader", func(w *Idempotent) (io.ReadCloser, error) { return w.Render(ctx, "7") }, "<p>7</p>", ""},
		{"io.Reader error", func(w *Idempotent) (io.ReadCloser, error) { return w.Render(ctx, "") }, "", "no page"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewIdempotent(newGuard(t))
			before := runs.Load()
			for i := 0; i < 2; i++ { // the first call streams, the second replays (or reruns after an error)
				r, err := tc.call(w)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(r)
				r.Close()
				if diff := cmp.Diff(tc.want, string(got)); diff != "" || !errIs(err, tc.wantErr) {
					t.Errorf("call %d: err %v, want %q; bytes (-want +got):\n%s", i+1, err, tc.wantErr, diff)
				}
			}
			if n := runs.Load() - before; tc.wantErr == "" && n != 1 {
				t.Errorf("ran %d times, want 1 (the duplicate replays)", n)
			}
		})
	}
}

// Close stops reading: Read then fails, and a duplicate still gets every byte.
func TestStreamClose(t *testing.T) {
	ctx := context.Background()
	w := NewIdempotent(newGuard(t))
	r, err := w.Download(ctx, "c.txt")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2)
	if _, err := r.Read(buf); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := r.Read(buf); err == nil {
		t.Error("Read after Close: no error")
	}
	r, _ = w.Download(ctx, "c.txt")
	got, err := io.ReadAll(r)
	if err != nil || string(got) != "c.txt\nc.txt\nc.txt\n" {
		t.Errorf("duplicate after Close: %q, %v", got, err)
	}
}
