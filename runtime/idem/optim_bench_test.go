package idem

import (
	"context"
	"testing"
)

var sinkCtx context.Context

// BenchmarkFnCtx is what fnCtx saves over making fn's ctx with
// context.WithCancelCause (and canceling it once fn returns; the running
// value is in the execution either way) for a
// function that never asks for Done, under a parent that can be canceled
// (an HTTP request's, say).
func BenchmarkFnCtx(b *testing.B) {
	parent, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	r := &running{}
	b.Run("WithCancelCause", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx, cancel := context.WithCancelCause(parent)
			sinkCtx = ctx
			cancel(nil)
		}
	})
	b.Run("fnCtx", func(b *testing.B) {
		b.ReportAllocs()
		x := new(execution)
		for b.Loop() {
			x.ctx = fnCtx{parent: parent, run: r}
			sinkCtx = &x.ctx
			x.ctx.end()
		}
	})
}
