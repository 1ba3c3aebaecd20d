package idemhook

import (
	"context"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/internal/adapter"
)

// This file is the receiver's whole use of runtime/idem's call API: the
// Spec it runs under and the one guarded call.

// newSpec is the Spec of a receiver's deliveries.
func newSpec(cfg *config) idem.Spec {
	spec := idem.Spec{Name: cfg.name, TTL: cfg.ttl, OnFailure: idem.FailureUnlock}
	if cfg.recordFailures {
		spec.OnFailure = idem.FailureLock
	}
	if cfg.wait > 0 && !cfg.acceptRunning {
		spec.OnDuplicate, spec.Wait = idem.DuplicateWait, cfg.wait
	}
	return spec
}

// guarded claims the delivery ID id and runs fn at most once for it. The
// raw body is the payload fingerprint: the same ID with another body is
// idem.ErrPayloadMismatch. It is called only after the delivery verified.
func (rc *Receiver[T]) guarded(ctx context.Context, id string, body []byte, fn func(context.Context) (struct{}, error)) (struct{}, error) {
	c, k := idemimpl.Begin(rc.g, &rc.spec)
	k.Key().ID(id)
	adapter.WriteBody(k.Payload(), body)
	return idem.Do(ctx, c, fn)
}
