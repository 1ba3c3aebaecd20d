// Package streamseq2 wraps a function returning iter.Seq2[T, error].
package streamseq2

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync/atomic"
)

// runs counts real runs of Complete.
var runs atomic.Int64

type Token struct {
	Text string
	N    int
}

// Complete streams the words of prompt; the word FAIL fails the stream.
//
//idem:ttl=1h
func Complete(ctx context.Context, prompt string) (iter.Seq2[Token, error], error) {
	runs.Add(1)
	return func(yield func(Token, error) bool) {
		for i, w := range strings.Fields(prompt) {
			if w == "FAIL" {
				yield(Token{}, errors.New("model failed"))
				return
			}
			if !yield(Token{Text: w, N: i}, nil) {
				return
			}
		}
	}, nil
}

// Model answers in its own name: a method's stream.
type Model struct{ Name string }

// Answer streams the model's name, then the words of q.
//
//idem:ttl=1h key=m.Name,q
func (m *Model) Answer(ctx context.Context, q string) (iter.Seq2[Token, error], error) {
	seq, err := Complete(ctx, m.Name+" "+q)
	return seq, err
}
