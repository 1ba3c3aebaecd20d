// Package idemstore is the contract between a Guard and the store behind
// it, as database/sql/driver is database/sql's: the interfaces a store
// implements and the values a claim, a lease and a record carry. Users of
// idemgen's wrappers never name it; an author of a new store, the
// conformance suite (runtime/idemtest) and operators' tools (idemctl) do.
//
// The errors a store returns (ErrLeaseLost, ErrNotFound,
// ErrResultTooLarge, ErrStoreUnavailable) are runtime/idem's, because
// callers test for them.
package idemstore

import (
	"context"
	"strconv"
	"time"
)

// State is the lifecycle state of a record.
type State uint8

const (
	// StateAbsent is reported for a key with no live record.
	StateAbsent State = iota
	// StateInProgress: an owner holds a lease and is running the function.
	StateInProgress
	// StateCompleted: the function returned normally; Result holds its value.
	StateCompleted
	// StateFailed: the function failed under on_failure=lock; Result holds
	// the recorded error.
	StateFailed
	// StateReleased: the owner gave the key up (error under
	// on_failure=unlock, panic, or an operator release). The next claim
	// with the record's fingerprint acquires it with a higher fence: a
	// released record keeps its fence and its fingerprint.
	StateReleased
)

var stateNames = [...]string{"absent", "in_progress", "completed", "failed", "released"}

// String is the state's name, as idemctl shows it.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// Token identifies one owner (one execution attempt). Guards mint them
// without allocating: a random per-Guard prefix and a counter. The zero
// Token is no owner.
type Token [16]byte

// Fingerprint is the SHA-256 (or HMAC-SHA-256) of a call's full payload.
// A claim whose fingerprint differs from a retained record's is a mismatch,
// whatever the record's state (see Store.Claim).
type Fingerprint [32]byte

// ClaimRequest asks a store to take ownership of a key.
type ClaimRequest struct {
	Key         string
	Fingerprint Fingerprint
	Owner       Token
	// Lease is how long the claim holds without a heartbeat.
	Lease time.Duration
	// TTL is how long a finished (or released) record is retained, and
	// how long an in-progress record is retained after its lease.
	TTL time.Duration
	// Order, when its Key is set, asks for per-entity ordering (see
	// OrderClaim). Stores that support it implement Orderer.
	Order OrderClaim
}

// OrderClaim makes a claim that would execute also check and advance the
// entity's last accepted time, atomically with the claim: if At is older
// than the last accepted time minus Grace, the claim changes nothing and
// returns ClaimOutOfOrder; otherwise the last accepted time becomes
// max(last, At) and the claim proceeds. Claims that find the key in
// progress, completed or failed do not look at the order at all, so a
// replay of an accepted event stays a replay.
type OrderClaim struct {
	// Key is the store key of the entity's order record. The Guard builds
	// it as "<prefix><name>:v<version>:{<entity hash>}" and puts the same
	// "{<entity hash>}" into the call's key, so stores that shard by a
	// hash tag (Redis Cluster) keep both in one slot.
	Key   string
	At    time.Time
	Grace time.Duration
	// Override accepts the event even if it is out of order (an operator's
	// decision, recorded by the Guard); the last accepted time still only
	// moves forward.
	Override bool
}

// Orderer is implemented by stores that support OrderClaim. A Guard refuses
// to run an ordered function on a store that does not.
type Orderer interface {
	SupportsOrdering() bool
}

// Admin is implemented by stores that operators can inspect and repair
// (the idemctl command).
type Admin interface {
	// List calls fn with every record whose key starts with prefix, live or
	// not yet cleaned up, in no particular order, until fn returns an error
	// (which List returns).
	List(ctx context.Context, prefix string, fn func(Record) error) error
	// ForceRelease releases key whatever its owner and bumps its fence,
	// so a still-running owner can neither heartbeat nor complete. The
	// record keeps its fingerprint and its retention: the key is free for
	// a retry of the same payload only. An operator who wants to reuse
	// the key for another payload deletes the record (Store.Delete).
	ForceRelease(ctx context.Context, key string) (Record, error)
	// Cleanup removes records that are no longer live and returns how many.
	Cleanup(ctx context.Context) (int, error)
}

// ClaimStatus is what a claim found.
type ClaimStatus uint8

const (
	// ClaimAcquired: there was no retained record (absent, or past its
	// retention), or a released one with the claim's fingerprint; the
	// caller owns the key now.
	ClaimAcquired ClaimStatus = iota + 1
	// ClaimTakenOver: a previous owner's lease had expired (and its record
	// holds the claim's fingerprint); the caller owns the key now with a
	// higher fence.
	ClaimTakenOver
	// ClaimInProgress: another owner holds a live lease.
	ClaimInProgress
	// ClaimCompleted: the key finished; Result holds the stored value.
	ClaimCompleted
	// ClaimFailed: the key failed under on_failure=lock; Result holds the
	// recorded error.
	ClaimFailed
	// ClaimMismatch: a retained record holds a different fingerprint, in
	// any state (in progress, live lease or expired, completed, failed,
	// released). The claim changed nothing.
	ClaimMismatch
	// ClaimOutOfOrder: the claim would have executed, but its OrderClaim.At
	// is older than the entity's last accepted time minus the grace.
	ClaimOutOfOrder
)

var claimNames = [...]string{"", "acquired", "taken_over", "in_progress", "completed", "failed", "mismatch", "out_of_order"}

// String is the status's name, for logs and test failures.
func (s ClaimStatus) String() string {
	if int(s) < len(claimNames) && s != 0 {
		return claimNames[s]
	}
	return "claim(" + strconv.Itoa(int(s)) + ")"
}

// Result is what a finished call leaves behind.
type Result struct {
	// Data is the codec's encoding of the value (completed) or of the
	// recorded error (failed). Every store persists it byte for byte.
	Data []byte
	// Value is the decoded value. In-process stores (the memory store) may
	// keep it and hand it back on replay so a replay costs no decoding;
	// other stores leave it nil. Treat replayed values as read-only: like
	// singleflight, in-process replays share one value.
	Value any
}

// ClaimResult is the outcome of Store.Claim.
type ClaimResult struct {
	Status ClaimStatus
	// Fence is the caller's new fence when it owns the key, otherwise the
	// fence of the record found.
	Fence uint64
	// LeaseUntil is the owner's lease expiry (store clock) for
	// ClaimAcquired, ClaimTakenOver and ClaimInProgress.
	LeaseUntil time.Time
	// Result is set for ClaimCompleted and ClaimFailed.
	Result Result
	// LastAccepted is the entity's last accepted time for ClaimOutOfOrder.
	LastAccepted time.Time
	// Steps are the recovery points (see Stepper) of a record the store
	// retained, by step name, for ClaimAcquired and ClaimTakenOver.
	Steps map[string][]byte
}

// Lease is the handle an owner uses for its fenced writes.
type Lease struct {
	Key   string
	Owner Token
	Fence uint64
	// Duration is the lease length a heartbeat renews.
	Duration time.Duration
	// TTL is how long the finished or released record is retained.
	TTL time.Duration
}

// Record is a store's view of one key, for inspection and tests.
type Record struct {
	Key         string
	State       State
	Owner       Token
	Fence       uint64
	Fingerprint Fingerprint
	// Result is the encoded value (completed) or error (failed).
	Result []byte
	// LeaseUntil is the lease expiry of an in-progress record.
	LeaseUntil time.Time
	// ExpiresAt is when a finished or released record stops being live.
	ExpiresAt time.Time
	// UpdatedAt is the store's time of the record's last write (claim,
	// heartbeat, completion, failure, release).
	UpdatedAt time.Time
	// ClaimedAt is when the current (or, once finished or released, the
	// last) owner's ownership began: the store's time of the claim that
	// acquired the key, a new claim or the takeover of an expired lease,
	// judged by the same clock as LeaseUntil and UpdatedAt. Heartbeat,
	// Complete, Fail and Release leave it unchanged, and so does an
	// operator's ForceRelease, so for an in-progress record now minus
	// ClaimedAt is how long the owner has been running, however often it
	// heartbeats. It is the zero time on a record written by a store
	// version that did not keep it (a record claimed before the upgrade);
	// such a record was claimed no later than its UpdatedAt.
	ClaimedAt time.Time
	// Steps are the call's recovery points (see Stepper), by step name,
	// for stores that keep them.
	Steps map[string][]byte
}

// Store is the persistence contract behind a Guard. Every method is one
// atomic operation; a networked store does each in one round trip, so a
// replay costs one round trip (Claim) and a first execution two (Claim,
// Complete). Times are judged by the store's clock where it has one.
//
// Fenced writes (Heartbeat, Complete, Fail, Release) are compare-and-set on
// the lease's owner and fence and on the record being in progress; anything
// else returns ErrLeaseLost and changes nothing. Lease expiry alone does not
// reject them: only a takeover or release does. One allowance: a store may
// answer nil to a fenced write that repeats one already applied by the same
// owner and fence with identical data (a request re-sent after its reply
// was lost; pgstore's completion inside the caller's transaction, which the
// Guard's own Complete then repeats), and to a Heartbeat of a record that
// owner has so completed.
//
// Complete and Fail return an error wrapping ErrResultTooLarge, before
// writing anything, for a result the store cannot hold.
//
// A canceled ctx must change nothing and return an error that wraps
// ctx.Err(). runtime/idemtest.RunStoreSuite checks all of this.
type Store interface {
	// Claim atomically inspects the key and, when it has no retained
	// record, or a retained one with req.Fingerprint that is released or
	// whose owner's lease has expired, makes req.Owner its owner with a
	// fence strictly greater than any fence the key has had while a record
	// of it was retained.
	//
	// A retained record keeps the fingerprint of the claim that created
	// it, whatever its state, until it is gone: a claim with another
	// fingerprint returns ClaimMismatch and changes nothing (no fence,
	// owner, lease or expiry change), even over an expired lease (a
	// crashed owner's payload may have had its effect) or a release. The
	// check is part of the atomic claim, not a read before it. A record is
	// retained until its expiry: TTL after it finished or was released,
	// and lease + TTL after the claim or last heartbeat while in progress
	// (a store may add a clock-skew margin). Past that it is gone, and a
	// claim with any fingerprint acquires.
	Claim(ctx context.Context, req ClaimRequest) (ClaimResult, error)
	// Heartbeat renews the lease to now + l.Duration.
	Heartbeat(ctx context.Context, l Lease) error
	// Complete stores the result and retains it for l.TTL.
	Complete(ctx context.Context, l Lease, r Result) error
	// Fail stores a recorded failure and retains it for l.TTL.
	Fail(ctx context.Context, l Lease, r Result) error
	// Release gives the key up, keeping its fence, so the next claim
	// acquires it.
	Release(ctx context.Context, l Lease) error
	// Get returns the live record for key, or ErrNotFound. Finished and
	// released records past their TTL are not live.
	Get(ctx context.Context, key string) (Record, error)
	// Delete removes the record for key whatever its state, or returns
	// ErrNotFound.
	Delete(ctx context.Context, key string) error
	// Wait blocks until key has no live in-progress record (it finished,
	// was released or deleted, or its lease expired) and returns nil, or
	// until ctx is done and returns an error wrapping ctx.Err(). Stores
	// wake waiters by notification where they can, with bounded polling as
	// a fallback so a lost notification delays but never hangs a waiter.
	Wait(ctx context.Context, key string) error
}

// Stepper is implemented by stores that keep recovery points: the results
// of named steps of a guarded call, recorded under the call's record.
//
// A claim that acquires or takes over a record the store still retains
// (a released key, an expired lease) returns the record's steps in
// ClaimResult.Steps; a claim that makes the record anew (the key absent or
// past its retention) drops any steps it had. Steps expire with their
// record.
type Stepper interface {
	// SaveStep records data as the result of the step name of the call
	// l owns: a compare-and-set on owner and fence, like Complete, so a
	// stale owner gets ErrLeaseLost and writes nothing. A step already
	// recorded under name keeps its first data (the Guard never saves a
	// name twice in one call). ErrResultTooLarge when data does not fit.
	SaveStep(ctx context.Context, l Lease, name string, data []byte) error
}

// A Stepper that cannot hold every step name (a length limit on field
// paths or map keys) also has a method CheckStepName(name string) error,
// saying why it could not record a step of that name: the Guard calls it
// before the step's function runs, and the step fails with ErrStep
// without running. Names that are not valid UTF-8 are refused on every
// store.
