package idem

import "github.com/idemgen/idemgen/runtime/idemstore"

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

// owns reports whether the claim made the caller the owner.
func owns(s idemstore.ClaimStatus) bool {
	return s == idemstore.ClaimAcquired || s == idemstore.ClaimTakenOver
}
