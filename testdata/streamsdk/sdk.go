// Package streamsdk wraps a function returning an SDK's stream (Next,
// Current, Err, Close, as openai-go's *ssestream.Stream[T]): the wrapper
// returns iter.Seq2[T, error].
package streamsdk

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
)

// runs counts real runs of Chat.
var runs atomic.Int64

// Stream is an SDK's server-sent-event stream.
type Stream[T any] struct {
	items []T
	cur   T
	err   error
	fail  error // reported by Err once the items are read
}

func (s *Stream[T]) Next() bool {
	if len(s.items) == 0 {
		s.err = s.fail
		return false
	}
	s.cur, s.items = s.items[0], s.items[1:]
	return true
}

func (s *Stream[T]) Current() T   { return s.cur }
func (s *Stream[T]) Err() error   { return s.err }
func (s *Stream[T]) Close() error { return nil }

type Delta struct {
	Content string
	Index   int64
}

// Chat streams a delta per word of msg; a trailing "!" fails the stream
// after its items.
//
//idem:ttl=1h
func Chat(ctx context.Context, msg string) (*Stream[Delta], error) {
	runs.Add(1)
	s := &Stream[Delta]{}
	for i, w := range strings.Fields(strings.TrimSuffix(msg, "!")) {
		s.items = append(s.items, Delta{Content: w, Index: int64(i)})
	}
	if strings.HasSuffix(msg, "!") {
		s.fail = errors.New("connection reset")
	}
	return s, nil
}
