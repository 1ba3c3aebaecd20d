// Package idemtest holds the store conformance suite that every idemstore.Store
// (the ones in this module and third-party ones) runs with one call.
package idemtest

import (
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Harness tells the suite how to make stores.
type Harness struct {
	// New returns a fresh store, isolated from every other store New
	// returned (its own key prefix, schema, directory…). When ManualClock
	// is set the store must read time from now; otherwise now is time.Now
	// and may be ignored (stores judged by a server clock ignore it).
	New func(t *testing.T, now func() time.Time) idemstore.Store
	// ManualClock: the store uses the clock given to New, so the suite
	// moves time forward instantly instead of sleeping.
	ManualClock bool
	// Lease is the lease the suite uses when it has to wait for real time
	// (default 300ms). Raise it for slow stores.
	Lease time.Duration
	// Corrupt, if set, damages the record at key in s (the suite has just
	// completed a call there) so that the store cannot decode it, the way
	// a foreign writer or a bad disk would.
	// The hostile cases then check that Claim and Get both report
	// idem.ErrCorruptRecord and that a fail-open Guard does not run.
	Corrupt func(t *testing.T, s idemstore.Store, key string)
	// Legacy, if set, rewrites the record at key in s (the suite has just
	// claimed or completed a call there) the way the store's previous
	// record format wrote it, before records carried ClaimedAt. The
	// legacy cases then check that the store still reads it (ClaimedAt
	// zero, or no later than UpdatedAt; never idem.ErrCorruptRecord), and
	// that its owner can heartbeat and complete it and duplicates replay it.
	Legacy func(t *testing.T, s idemstore.Store, key string)
	// Raw, if set, returns every value s holds (all its keys, rows,
	// items or files), read beside the store as a hidden reader of the
	// server or its backups would. The sealing cases then check that no
	// plaintext of a sealed result is anywhere in it.
	Raw func(t *testing.T, s idemstore.Store) [][]byte
}

// RunStoreSuite runs the conformance suite against the stores h makes.
func RunStoreSuite(t *testing.T, h Harness) {
	t.Helper()
	runSuite(t, h)
}
