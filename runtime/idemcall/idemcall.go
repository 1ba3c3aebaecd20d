// Package idemcall holds the options of the guarded call an adapter makes
// for each request or message: the key space's name and version, how long
// an outcome is kept, the lease, and whether a duplicate of a running call
// waits for it. The adapters share them: idemqueue.New takes them, and
// idemhttp and idemgrpc take them through their WithCall option.
//
//	mw, err := idemhttp.New(g, idemhttp.WithPrincipal(principal),
//		idemhttp.WithCall(idemcall.WithName("orders"), idemcall.WithTTL(48*time.Hour)))
//	q := idemqueue.New(g, idemcall.WithName("billing.credits"), idemcall.WithLease(10*time.Second))
//
// An adapter built on idem.Guard reads them with Spec.
package idemcall

import (
	"errors"
	"fmt"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
)

// Option sets one setting of an adapter's guarded call.
type Option func(*config)

// config is the Spec the options build and the first argument they could
// not use.
type config struct {
	spec idem.Spec
	err  error
}

func (c *config) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// WithName sets the key space in the store (the Spec's name; each adapter
// has its default). Give each adapter sharing a store its own name unless
// they should share keys, and two consumers that must each process every
// event (two subscribers of one topic) different names.
func WithName(name string) Option {
	return func(c *config) {
		if name == "" {
			c.fail(errors.New("WithName: empty name"))
		}
		c.spec.Name = name
	}
}

// WithVersion sets the key space's version: bump it to start afresh.
func WithVersion(v int) Option { return func(c *config) { c.spec.Version = v } }

// WithTTL sets how long a recorded outcome is kept and replayed (default
// 24h). For a queue, make it longer than the broker's redelivery horizon
// (retention, max redelivery age): a redelivery after the TTL runs the
// handler again.
func WithTTL(d time.Duration) Option {
	return func(c *config) { c.spec.TTL = positive(c, "WithTTL", d) }
}

// WithLease sets the in-progress lease (default 30s), heartbeated every
// lease/3 while the handler runs. After a crash, the key is free again
// once the lease expires.
func WithLease(d time.Duration) Option {
	return func(c *config) { c.spec.Lease = positive(c, "WithLease", d) }
}

// WithWait makes a duplicate that arrives while the first call with its
// key runs wait for it, up to d, and get its outcome. Zero or less makes
// it fail at once with idem.ErrInProgress (HTTP 409, gRPC Aborted, a queue
// message Failed). Default: no wait for idemhttp and idemgrpc, the lease
// for idemqueue. A wait that times out is idem.ErrInProgress too.
func WithWait(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.spec.OnDuplicate, c.spec.Wait = idem.DuplicateReturn, 0
			return
		}
		c.spec.OnDuplicate, c.spec.Wait = idem.DuplicateWait, d
	}
}

func positive(c *config, name string, d time.Duration) time.Duration {
	if d <= 0 {
		c.fail(fmt.Errorf("%s(%v): must be positive", name, d))
	}
	return d
}

// Spec returns base with opts applied, and the first of their arguments
// it could not use (an empty name, a TTL or lease that is not positive).
// The Spec always holds what the options set.
func Spec(base idem.Spec, opts ...Option) (idem.Spec, error) {
	c := config{spec: base}
	for _, o := range opts {
		o(&c)
	}
	return c.spec, c.err
}
