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
// Generated code builds the key with an idemimpl.KeyBuilder (a canonical,
// length-prefixed encoding hashed with SHA-256) and calls Do:
//
//	c, k := g.Begin(&specCharge)
//	k.Key().String(req.OrderID)
//	return idem.Do(ctx, c, func(ctx context.Context) (*Receipt, error) { return Charge(ctx, req) })
//
// The package depends on the standard library and runtime/idemimpl (the
// generated code's support, which users need not read) only. Stores live
// in their own packages: memstore (in memory), filestore, redisstore,
// pgstore and others.
package idem
