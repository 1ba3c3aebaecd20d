// Package streamreader wraps functions returning io.Reader and
// io.ReadCloser: their bytes are stored as chunks, and the wrappers
// return an io.ReadCloser.
package streamreader

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
)

// runs counts real runs of Download and Render.
var runs atomic.Int64

// Download returns the file's bytes; a name ending in ".broken" fails
// after them.
//
//idem:ttl=1h
func Download(ctx context.Context, name string) (io.ReadCloser, error) {
	runs.Add(1)
	body := io.Reader(strings.NewReader(strings.Repeat(name+"\n", 3)))
	if strings.HasSuffix(name, ".broken") {
		body = io.MultiReader(body, errReader{})
	}
	return io.NopCloser(body), nil
}

// Render returns the page of id; an empty id is an error.
//
//idem:ttl=1h
func Render(ctx context.Context, id string) (io.Reader, error) {
	runs.Add(1)
	if id == "" {
		return nil, errors.New("no page")
	}
	return strings.NewReader("<p>" + id + "</p>"), nil
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk failed") }
