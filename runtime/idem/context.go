package idem

import "context"

type leaseKey struct{}

// LeaseFrom returns the lease of the guarded call running with ctx.
func LeaseFrom(ctx context.Context) (Lease, bool) {
	l, ok := ctx.Value(leaseKey{}).(*Lease)
	if !ok {
		return Lease{}, false
	}
	return *l, true
}

// FenceFrom returns the fence of the guarded call running with ctx. Fences
// strictly increase on every takeover of a key: guard a business write with
// it (for example "UPDATE … WHERE last_fence < $fence") so that an owner
// that lost its lease cannot overwrite its successor's work.
func FenceFrom(ctx context.Context) (uint64, bool) {
	l, ok := ctx.Value(leaseKey{}).(*Lease)
	if !ok {
		return 0, false
	}
	return l.Fence, true
}
