package idemimpl_test

import (
	"bytes"
	"errors"
	"io"
	"iter"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// TestReadChunks: every byte read is yielded once, in a slice of its own,
// and the reader's error (not io.EOF) is returned; a false yield stops it.
func TestReadChunks(t *testing.T) {
	boom := errors.New("boom")
	big := strings.Repeat("x", 80<<10)
	tests := []struct {
		name    string
		r       io.Reader
		stop    int // yield returns false at this chunk; 0: never
		want    string
		wantErr error
	}{
		{"empty", strings.NewReader(""), 0, "", nil},
		{"small", strings.NewReader("hello"), 0, "hello", nil},
		{"larger than a chunk", strings.NewReader(big), 0, big, nil},
		{"one byte reads", iotest.OneByteReader(strings.NewReader("abc")), 0, "abc", nil},
		{"data with EOF", iotest.DataErrReader(strings.NewReader("abc")), 0, "abc", nil},
		{"error after data", io.MultiReader(strings.NewReader("ab"), iotest.ErrReader(boom)), 0, "ab", boom},
		{"stop", iotest.OneByteReader(strings.NewReader("abc")), 2, "ab", nil},
		{"no progress", io.MultiReader(strings.NewReader("ab"), emptyReads{}), 0, "ab", io.ErrNoProgress},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got bytes.Buffer
			var chunks [][]byte
			err := idemimpl.ReadChunks(tc.r, func(b []byte) bool {
				chunks = append(chunks, b)
				got.Write(b)
				return len(chunks) != tc.stop
			})
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if got.String() != tc.want {
				t.Errorf("read %d bytes, want %d", got.Len(), len(tc.want))
			}
			for i := 1; i < len(chunks); i++ { // each chunk is its own slice
				if len(chunks[i-1]) > 0 && len(chunks[i]) > 0 && &chunks[i-1][0] == &chunks[i][0] {
					t.Errorf("chunks %d and %d share memory", i-1, i)
				}
			}
		})
	}
}

// TestReadChunksCloses: an io.ReadCloser is closed once read.
func TestReadChunksCloses(t *testing.T) {
	c := &closer{Reader: strings.NewReader("x")}
	if err := idemimpl.ReadChunks(c, func([]byte) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if !c.closed {
		t.Error("not closed")
	}
}

// emptyReads is a broken reader: every Read returns (0, nil).
type emptyReads struct{}

func (emptyReads) Read([]byte) (int, error) { return 0, nil }

type closer struct {
	io.Reader
	closed bool
}

func (c *closer) Close() error { c.closed = true; return nil }

func seqOf(err error, items ...string) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for _, s := range items {
			if !yield([]byte(s), nil) {
				return
			}
		}
		if err != nil {
			yield(nil, err)
		}
	}
}

// TestStreamReader: Read returns the items' bytes in order, then io.EOF
// or the error that ended the sequence, whatever the buffer's size.
func TestStreamReader(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		seq     iter.Seq2[[]byte, error]
		want    string
		wantErr error
	}{
		{"empty", seqOf(nil), "", nil},
		{"items", seqOf(nil, "ab", "", "cde"), "abcde", nil},
		{"error", seqOf(boom, "ab", "c"), "abc", boom},
	}
	for _, tc := range tests {
		for _, size := range []int{1, 2, 512} {
			r := idemimpl.StreamReader(tc.seq)
			var got []byte
			var err error
			buf := make([]byte, size)
			for {
				var n int
				n, err = r.Read(buf)
				got = append(got, buf[:n]...)
				if err != nil {
					break
				}
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("%s, buffer %d: (-want +got):\n%s", tc.name, size, diff)
			}
			want := tc.wantErr
			if want == nil {
				want = io.EOF
			}
			if !errors.Is(err, want) {
				t.Errorf("%s, buffer %d: err = %v, want %v", tc.name, size, err, want)
			}
			if err := r.Close(); err != nil {
				t.Errorf("%s: Close: %v", tc.name, err)
			}
		}
	}
}

// TestStreamReaderClose: Close stops ranging the sequence, and Read
// fails after it.
func TestStreamReaderClose(t *testing.T) {
	stopped := false
	seq := func(yield func([]byte, error) bool) {
		for yield([]byte("x"), nil) {
		}
		stopped = true
	}
	r := idemimpl.StreamReader(seq)
	if _, err := r.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !stopped {
		t.Error("the sequence was not stopped")
	}
	if n, err := r.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("Read after Close = %d, %v; want an error", n, err)
	}
}
