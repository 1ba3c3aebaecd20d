package idem

import (
	"context"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// inProcess is implemented by stores whose calls never wait on anything
// outside the process (the memory store): no network, no disk, no lock
// held across I/O. A Guard hands their writes after the function the
// caller's ctx without its cancelation, where for any other store it must
// bound each write by a timer (it could hang; docs/BENCHMARKS.md, "What
// each speed mechanism earns"). A wrapper that embeds such a
// store inherits the method: if the wrapper's own calls can block, it
// must declare InProcess() false.
type inProcess interface {
	InProcess() bool
}

// recordClaimer is implemented by the memory store: its ClaimRecord is
// Claim that also returns an opaque handle on the key's record (when it
// is not the one passed in), and takes the handle back on a later claim
// of the same key to skip finding the record by its key (hashing the key
// and looking it up in a map). The key memo keeps the handle with the key. RecordStore must return the store
// itself: a wrapper that embeds the memory store inherits ClaimRecord,
// which would bypass the wrapper's own Claim, and is claimed through
// Claim. docs/BENCHMARKS.md ("What each speed mechanism earns") measures it.
type recordClaimer interface {
	ClaimRecord(ctx context.Context, req idemstore.ClaimRequest, rec any) (idemstore.ClaimResult, any, error)
	RecordStore() idemstore.Store
}

// owns reports whether the claim made the caller the owner.
func owns(s idemstore.ClaimStatus) bool {
	return s == idemstore.ClaimAcquired || s == idemstore.ClaimTakenOver
}
