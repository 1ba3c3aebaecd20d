// Package streamseq wraps a function returning iter.Seq[T]: the wrapper
// returns iter.Seq2[T, error].
package streamseq

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync/atomic"
)

// runs counts real runs of Words.
var runs atomic.Int64

// Words streams the words of text; an empty text is an error.
//
//idem:ttl=1h
func Words(ctx context.Context, text string) (iter.Seq[string], error) {
	runs.Add(1)
	if text == "" {
		return nil, errors.New("no text")
	}
	return func(yield func(string) bool) {
		for _, w := range strings.Fields(text) {
			if !yield(w) {
				return
			}
		}
	}, nil
}
