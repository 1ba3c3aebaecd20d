// Package idem is the runtime behind idemgen's generated wrappers: it runs a
// function at most once per idempotency key and hands every duplicate the
// first call's result.
//
// A Guard claims the key in a Store with one atomic operation. The winner
// owns the key under a lease that the Guard heartbeats every Lease/3 while
// the function runs, and under a fence that strictly increases whenever the
// key changes hands. When the function returns, the Guard stores its encoded
// result (compare-and-set on owner and fence, so an owner that lost its lease
// cannot overwrite its successor); duplicates replay it. Same-key callers in
// one process are answered in process.
//
// A call names its key (a canonical, length-prefixed encoding hashed with
// SHA-256) when it begins, and Do runs it:
//
//	c := g.Begin(&specCharge, req.OrderID)
//	return idem.Do(ctx, c, func(ctx context.Context) (*Receipt, error) { return Charge(ctx, req) })
//
// idemgen's generated wrappers begin theirs through runtime/idemimpl,
// which writes the key field by field; that package is for generated code
// only, and nothing a person writes (a hand-written call, a Keyer, a
// Store, an adapter) needs it. This package depends on the standard
// library and runtime/internal/impl (what it shares with idemimpl) only.
// Stores live in their own packages: memstore (in memory),
// filestore, redisstore, pgstore and others.
package idem
