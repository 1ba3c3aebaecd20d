package idemimpl

import (
	"bytes"
	"errors"
	"io"
	"iter"
)

// chunkSize bounds the items ReadChunks yields: each is one record in
// the store.
const chunkSize = 32 << 10

// maxEmptyReads is how many Reads in a row may return no bytes and no
// error before ReadChunks gives up with io.ErrNoProgress, as bufio does:
// such a reader is broken, and reading on would spin forever.
const maxEmptyReads = 100

// errReaderClosed is what Read returns after Close.
var errReaderClosed = errors.New("idem: read of a closed stream")

// ReadChunks reads r to its end and yields what each Read returned, in a
// slice of its own: the items of a streamed io.Reader result. It returns
// r's error (nil at io.EOF, or when yield returns false), or
// io.ErrNoProgress after maxEmptyReads Reads in a row returned nothing,
// and closes r when r is an io.Closer.
func ReadChunks(r io.Reader, yield func([]byte) bool) error {
	if c, ok := r.(io.Closer); ok {
		defer c.Close()
	}
	buf := make([]byte, chunkSize)
	for empty := 0; ; {
		n, err := r.Read(buf)
		if n > 0 && !yield(bytes.Clone(buf[:n])) {
			return nil
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if n > 0 {
			empty = 0
		} else if empty++; empty == maxEmptyReads {
			return io.ErrNoProgress
		}
	}
}

// StreamReader is the io.ReadCloser a wrapper of a function returning
// an io.Reader returns: Read returns the bytes of seq's items in order,
// then io.EOF, or the error that ended seq. Close stops ranging seq (the
// stream is still recorded to its end).
func StreamReader(seq iter.Seq2[[]byte, error]) io.ReadCloser {
	next, stop := iter.Pull2(seq)
	return &streamReader{next: next, stop: stop}
}

type streamReader struct {
	next func() ([]byte, error, bool)
	stop func()
	buf  []byte
	err  error // what Read returns once buf is empty
}

func (r *streamReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		b, err, ok := r.next()
		switch {
		case !ok:
			r.err = io.EOF
		case err != nil:
			r.err = err
		default:
			r.buf = b
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func (r *streamReader) Close() error {
	r.stop()
	r.buf, r.err = nil, errReaderClosed
	return nil
}
