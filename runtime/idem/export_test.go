package idem

import (
	"context"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Hooks for the external tests.

func SetWriteTimeoutFloor(d time.Duration) (restore func()) {
	old := writeTimeoutFloor
	writeTimeoutFloor = d
	return func() { writeTimeoutFloor = old }
}

func (g *Guard) WriteCtx(ctx context.Context, l idemstore.Lease) (context.Context, context.CancelFunc) {
	return g.writeCtx(ctx, l)
}

func (g *Guard) Orphans() int32 { return g.orphans.n.Load() }

// Derive hashes c's key material and builds its store key, leaving c
// unfinished (the derivation benchmark repeats it).
func (c Call) Derive() {
	var o idemstore.OrderClaim
	c.s.derive(&o)
}

// WithKeyMemo sizes the Guard's key memo; 0 turns it off.
func WithKeyMemo(entries int) Option { return func(c *config) { c.memo = entries } }

// ForgetSpecs forgets which Spec claimed each name and version, as
// another process would not know: tests of records that two functions
// share use it.
func ForgetSpecs() { specs.Clear() }
