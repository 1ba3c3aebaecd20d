package idem

import (
	"context"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

type leaseKey struct{}

// LeaseFrom returns the lease of the guarded call running with ctx, and
// the codec the Guard records its result with, so a store that completes
// a record itself (pgstore's transactional completion) writes exactly
// the bytes the Guard would: the function's identity header, then the
// result's encoding.
func LeaseFrom(ctx context.Context) (idemstore.Lease, Codec, bool) {
	r, ok := ctx.Value(leaseKey{}).(*running)
	if !ok {
		return idemstore.Lease{}, nil, false
	}
	return r.lease, &r.codec, true
}

// FenceFrom returns the fence of the guarded call running with ctx. Fences
// strictly increase on every takeover of a key: guard a business write with
// it (for example "UPDATE … WHERE last_fence < $fence") so that an owner
// that lost its lease cannot overwrite its successor's work.
func FenceFrom(ctx context.Context) (uint64, bool) {
	r, ok := ctx.Value(leaseKey{}).(*running)
	if !ok {
		return 0, false
	}
	return r.lease.Fence, true
}
