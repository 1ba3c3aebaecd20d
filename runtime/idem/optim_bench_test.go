package idem

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"testing"
)

var sinkSum [32]byte

// BenchmarkKeyedHash is what the Guard's pooled HMAC (keyedHash) saves
// over a new HMAC per derived key (docs/BENCHMARKS.md, "What the
// runtime's optimisations save").
func BenchmarkKeyedHash(b *testing.B) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	g := NewGuard(nil, WithHMAC(secret))
	var in [32]byte
	b.Run("hmac_New_per_key", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h := hmac.New(sha256.New, secret)
			h.Write(in[:])
			copy(sinkSum[:], h.Sum(nil))
		}
	})
	b.Run("keyedHash_pool", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkSum = g.mac(in)
		}
	})
}

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

var sinkToken Token

// BenchmarkTokenMint is what minting a call's token from its state's
// block of numbers saves over an atomic add on the Guard's counter per
// call.
func BenchmarkTokenMint(b *testing.B) {
	g := NewGuard(nil)
	b.Run("counter_per_call", func(b *testing.B) {
		for b.Loop() {
			sinkToken = g.token()
		}
	})
	b.Run("state_block", func(b *testing.B) {
		c := &callState{g: g}
		for b.Loop() {
			sinkToken = c.mint()
		}
	})
}
