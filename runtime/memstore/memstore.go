// Package memstore is the in-memory idemstore.Store: a sharded map in this
// process, for tests, single-process services and the embedded default.
//
//	g := idem.NewGuard(memstore.New())
package memstore

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"maps"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Store is the embedded store: a sharded map in this process. It
// keeps decoded result values, so a replay neither decodes nor allocates.
// It does not survive a restart and is not shared between processes.
//
// Expired records are dropped by a sweep that claims run now and then on
// their own shard (and by Cleanup), not at the instant they expire. A
// claim of a key whose record has expired therefore continues that
// record's fence if the record is still held, or starts again at fence 1
// if a sweep dropped it; which of the two happens depends on how keys
// fall into shards, which is seeded per process. Both are allowed: fences
// never repeat while a record of the key is retained (as with a Redis key
// whose TTL ran out).
type Store struct {
	shards [memShards]memShard
	orders [memShards]orderShard
	max    int64
	count  atomic.Int64
	// maxBytes bounds bytes, the estimated memory the records hold (see
	// recordSize); a claim of a new key past it fails like one past max.
	maxBytes int64
	bytes    atomic.Int64
	now      func() time.Time // nil: the monotonic clock (see instant)
	poll     time.Duration
}

const memShards = 64

type memShard struct {
	mu    sync.Mutex
	index uint8 // in Store.shards
	m     map[string]*memRecord
	// claims counts this shard's claims since its last sweep, which is
	// due when it reaches nextSweep, and only once a record may have
	// expired: sweepAt is no later than the earliest ExpiresAt of the
	// shard's records (every write that sets one lowers it; a sweep
	// recomputes it), and a sweep before it would find nothing.
	claims, nextSweep int
	sweepAt           instant
}

type orderShard struct {
	mu sync.Mutex
	m  map[string]orderRecord
}

// orderRecord is an entity's last accepted event time.
type orderRecord struct {
	last      time.Time
	expiresAt instant
}

// memRecord is a record as the store keeps it: idemstore.Record's fields, with
// its times as instants (see Store.record).
type memRecord struct {
	Key   string
	State idemstore.State
	// shard is the index of the record's shard, and gone says the record
	// was dropped from it: ClaimRecord's handle on the record (see there).
	shard       uint8
	gone        bool
	Owner       idemstore.Token
	Fence       uint64
	Fingerprint idemstore.Fingerprint
	Result      []byte
	Steps       map[string][]byte
	LeaseUntil  instant
	ExpiresAt   instant
	UpdatedAt   instant
	ClaimedAt   instant
	value       any
	size        int64 // what this record adds to Store.bytes
	// stream is the current run's stream items (Streamer), nil for a
	// record without any: a pointer, so records of plain calls do not grow.
	stream *itemLog
	// wake is closed when the record leaves in_progress; waiters make it.
	wake chan struct{}
}

// Option configures a Store.
type Option func(*config)

type config struct {
	max      int64
	maxBytes int64
	now      func() time.Time
	poll     time.Duration
}

// WithMaxRecords bounds the number of records (default 1,000,000). At the
// bound a claim of a new key fails with ErrStoreFull after expired records
// are swept; replays of stored keys are still served.
func WithMaxRecords(n int) Option { return func(c *config) { c.max = int64(n) } }

// WithMaxBytes bounds the memory the records hold (default 256 MiB), as
// estimated by their keys, stored results and a fixed overhead per record.
// At the bound a claim of a new key fails with ErrStoreFull after expired
// records are swept, as at the record bound; replays of stored keys are
// still served. A single result larger than the bound gets
// ErrResultTooLarge (the Guard records the call as failed).
func WithMaxBytes(n int64) Option { return func(c *config) { c.maxBytes = n } }

// DefaultMaxBytes is the memory store's default byte bound.
const DefaultMaxBytes = 256 << 20

// keepValueMax is the largest encoded result whose decoded value the store
// also keeps, so that its replays neither decode nor allocate. A larger
// result is kept once, encoded: its replays decode it, which costs in
// proportion to its size, and the store does not hold it twice.
const keepValueMax = 64 << 10

// recordOverhead is the per-record estimate of the map entry, the record
// struct and its bookkeeping, on top of key and result bytes. Measured
// (TestRetainedRecordHeap, Go 1.26): 211-231 heap bytes a record beyond
// its key and result, depending on where the shards' maps are in their
// growth; 256 keeps the estimate above the heap, so WithMaxBytes bounds
// what the records really hold (docs/CAPACITY.md).
const recordOverhead = 256

// recordSize is what r counts against WithMaxBytes: a kept value is
// estimated at the size of its encoding.
func recordSize(r *memRecord) int64 {
	n := int64(recordOverhead + len(r.Key) + len(r.Result))
	for name, data := range r.Steps {
		n += int64(stepOverhead + len(name) + len(data))
	}
	if r.value != nil {
		n += int64(len(r.Result))
	}
	if r.stream != nil {
		n += r.stream.bytes
	}
	return n
}

// resize recounts r after a change to its result. Caller holds r's shard lock.
func (s *Store) resize(r *memRecord) {
	n := recordSize(r)
	s.bytes.Add(n - r.size)
	r.size = n
}

// Bytes returns the estimated memory the records hold (see WithMaxBytes).
func (s *Store) Bytes() int64 { return s.bytes.Load() }

// WithClock replaces the store's clock, which judges its leases and
// retention (tests), with one that reads between the years 1678 and 2262.
// The Guard's own clock is idem.WithClock.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithPollInterval sets how often Wait re-checks a lease for expiry (default 50ms).
func WithPollInterval(d time.Duration) Option { return func(c *config) { c.poll = d } }

// New returns an empty memory store.
func New(opts ...Option) *Store {
	c := config{max: 1_000_000, maxBytes: DefaultMaxBytes, poll: 50 * time.Millisecond}
	for _, o := range opts {
		o(&c)
	}
	s := &Store{max: c.max, maxBytes: c.maxBytes, now: c.now, poll: c.poll}
	for i := range s.shards {
		s.shards[i].m = make(map[string]*memRecord)
		s.shards[i].index = uint8(i)
		s.shards[i].sweepAt = never
		s.orders[i].m = make(map[string]orderRecord)
	}
	return s
}

// instant is a point on the store's clock, in nanoseconds: since monoBase
// on the default clock, the process's monotonic clock (so leases are
// immune to wall-clock steps), or since the Unix epoch on an injected
// clock. The store keeps and compares its times as instants, and makes a
// time.Time only to answer: reading the monotonic clock as an instant is
// cheaper than a time.Time (BenchmarkClockRead), and a record's four
// times take 32 bytes without pointers instead of 96 with.
type instant int64

// never is later than any instant a record can have.
const never instant = math.MaxInt64

var monoBase = time.Now()

// add is i+d, saturating at never.
func (i instant) add(d time.Duration) instant {
	if d > 0 && i > never-instant(d) {
		return never
	}
	return i + instant(d)
}

// clock is the store's current instant.
func (s *Store) clock() instant {
	if s.now == nil {
		return instant(time.Since(monoBase))
	}
	return instant(s.now().UnixNano())
}

// time is i as the store's clock reads it: on the default clock with a
// monotonic reading (the Guard counts a lease from the claim with it).
func (s *Store) time(i instant) time.Time {
	if s.now == nil {
		return monoBase.Add(time.Duration(i))
	}
	return time.Unix(0, int64(i))
}

// record is r as idemstore.Record, sharing r's result and steps.
func (s *Store) record(r *memRecord) idemstore.Record {
	return idemstore.Record{Key: r.Key, State: r.State, Owner: r.Owner, Fence: r.Fence, Fingerprint: r.Fingerprint,
		Result: r.Result, Steps: r.Steps, LeaseUntil: s.time(r.LeaseUntil), ExpiresAt: s.time(r.ExpiresAt),
		UpdatedAt: s.time(r.UpdatedAt), ClaimedAt: s.time(r.ClaimedAt)}
}

// shardHash picks a key's shard.
func shardHash(key string) uint64 { return maphash.String(shardSeed, key) }

var shardSeed = maphash.MakeSeed()

func (s *Store) shard(key string) *memShard { return &s.shards[shardHash(key)%memShards] }

// SupportsOrdering reports that the memory store implements OrderClaim.
func (s *Store) SupportsOrdering() bool { return true }

// live reports whether r still counts at now: in-progress records are live
// until lease + TTL (then nothing can be stuck forever), finished and
// released ones until ExpiresAt.
func live(r *memRecord, now instant) bool {
	if r.State == idemstore.StateInProgress {
		return now < r.LeaseUntil.add(r.ttlAfterLease())
	}
	return now < r.ExpiresAt
}

// ttlAfterLease is how long a dead in-progress record is kept after its
// lease, so its fence is not reused soon after a crash.
func (r *memRecord) ttlAfterLease() time.Duration { return time.Duration(r.ExpiresAt - r.LeaseUntil) }

// InProcess says the store's calls never wait on I/O: a Guard then gives
// its writes after the function the caller's ctx without a timer.
func (s *Store) InProcess() bool { return true }

// Claim implements idemstore.Store under the key's shard lock.
func (s *Store) Claim(ctx context.Context, req idemstore.ClaimRequest) (res idemstore.ClaimResult, err error) {
	_, err = s.claim(ctx, &req, nil, &res)
	return res, err
}

// ClaimRecord is Claim for the Guard's key memo: it takes the handle on
// the key's record that an earlier ClaimRecord of the same key returned
// (or nil), and returns the key's record's handle if that is not rec (nil
// if rec still stands, or the key has no record). The handle spares
// hashing the key and finding its record while that record is still the
// key's. A record dropped by a sweep or Delete is marked gone, and its
// handle then finds the key's record as Claim does. The handle must come
// from this store and this key (the Guard's memo keeps it with the key).
func (s *Store) ClaimRecord(ctx context.Context, req idemstore.ClaimRequest, rec any) (res idemstore.ClaimResult, _ any, err error) {
	known, _ := rec.(*memRecord)
	r, err := s.claim(ctx, &req, known, &res)
	if r == nil || r == known {
		return res, nil, err // a nil *memRecord in an any would not be nil
	}
	return res, r, err
}

// RecordStore returns s: a Guard claims with ClaimRecord only on a store
// whose RecordStore is the store itself, so that a wrapper embedding the
// memory store, which inherits ClaimRecord, is still claimed through its
// own Claim.
func (s *Store) RecordStore() idemstore.Store { return s }

// claim is Claim and ClaimRecord, with known the record req.Key had (or
// nil), answering in *res; it returns the key's record after the claim.
func (s *Store) claim(ctx context.Context, req *idemstore.ClaimRequest, known *memRecord, res *idemstore.ClaimResult) (r *memRecord, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := s.clock()
	var order *orderShard
	if req.Order.Key != "" {
		// Lock order: an entity's shard before a record's, everywhere.
		order = &s.orders[shardHash(req.Order.Key)%memShards]
		order.mu.Lock()
	}
	var sh *memShard
	if known != nil {
		sh = &s.shards[known.shard]
	} else {
		sh = s.shard(req.Key)
	}
	sh.mu.Lock()
	r = known
	if r == nil || r.gone {
		r = sh.m[req.Key]
	}
	r, err = s.claimLocked(sh, r, order, req, now, res)
	sh.mu.Unlock()
	if order != nil {
		order.mu.Unlock()
	}
	return r, err
}

// claimLocked is Claim with the record's shard (and the entity's, for an
// ordered claim) locked; r is the key's record, nil if it has none. It
// returns the key's record after the claim. Unlocking in the caller
// instead of deferring keeps the many returns here cheap.
func (s *Store) claimLocked(sh *memShard, r *memRecord, order *orderShard, req *idemstore.ClaimRequest, now instant, res *idemstore.ClaimResult) (*memRecord, error) {
	// A record past its retention is gone: it answers nothing and forgets
	// its fingerprint, and only its fence carries over to an acquiring
	// claim, which rewrites the rest. It is left as it is until then, so
	// a claim that ends without acquiring (out of order, store full)
	// changes nothing, as on the other stores.
	retained := r != nil && r.State != idemstore.StateAbsent && live(r, now)
	status := idemstore.ClaimAcquired
	if retained && r.Fingerprint != req.Fingerprint {
		// A retained record keeps its first claim's fingerprint in every
		// state, an expired lease and a release included: a crashed A may
		// have had its effect, so B must not run under A's key.
		*res = idemstore.ClaimResult{Status: idemstore.ClaimMismatch, Fence: r.Fence}
		return r, nil
	}
	if retained {
		// Here, not in a function of its own: a replay's path.
		switch r.State {
		case idemstore.StateInProgress:
			if now >= r.LeaseUntil {
				status = idemstore.ClaimTakenOver
				break
			}
			*res = idemstore.ClaimResult{Status: idemstore.ClaimInProgress, Fence: r.Fence, LeaseUntil: s.time(r.LeaseUntil)}
			return r, nil
		case idemstore.StateCompleted, idemstore.StateFailed:
			st := idemstore.ClaimCompleted
			if r.State == idemstore.StateFailed {
				st = idemstore.ClaimFailed
			}
			*res = idemstore.ClaimResult{Status: st, Fence: r.Fence, Result: idemstore.Result{Data: r.Result, Value: r.value}}
			return r, nil
		}
	}
	if err := s.admit(sh, r == nil, req.Key, now); err != nil {
		return r, err
	}
	if order != nil && !advanceOrder(order, r, req, now, res) {
		return r, nil
	}
	if r == nil {
		r = &memRecord{shard: sh.index}
		r.Key = req.Key
		sh.m[req.Key] = r
		s.count.Add(1)
		s.resize(r)
	}
	s.wakeAll(r) // a taken-over owner's waiters re-check
	var steps map[string][]byte
	if retained {
		steps = maps.Clone(r.Steps)
	} else {
		r.Steps = nil // a new call under an expired key: its steps are not ours
	}
	r.dropItems() // a new run: its stream starts at item 0
	r.State = idemstore.StateInProgress
	r.Owner = req.Owner
	r.Fence++
	r.Fingerprint = req.Fingerprint
	r.Result, r.value = nil, nil
	s.resize(r)
	r.LeaseUntil = now.add(req.Lease)
	r.ExpiresAt = r.LeaseUntil.add(req.TTL)
	sh.expires(r.ExpiresAt)
	r.UpdatedAt = now
	r.ClaimedAt = now
	*res = idemstore.ClaimResult{Status: status, Fence: r.Fence, LeaseUntil: s.time(r.LeaseUntil), Steps: steps}
	return r, nil
}

// admit makes room for a claim of key in sh, a new key when isNew: at the
// record or byte bound it sweeps sh first and refuses the claim if that
// did not free room. Caller holds sh.mu.
func (s *Store) admit(sh *memShard, isNew bool, key string, now instant) error {
	if isNew && (s.count.Load() >= s.max || s.bytes.Load() >= s.maxBytes) {
		s.sweep(sh, now, "")
		if s.count.Load() >= s.max {
			return fmt.Errorf("%w: %d records", idem.ErrStoreFull, s.max)
		}
		if b := s.bytes.Load(); b >= s.maxBytes {
			return fmt.Errorf("%w: %d of %d bytes", idem.ErrStoreFull, b, s.maxBytes)
		}
	}
	// Sweep this shard every so often, so expired records do not pile up
	// without a background goroutine. Only this shard: locking a second
	// one here could deadlock against a claim that holds it. The record
	// being claimed is spared: it is about to be reused. A shard is swept
	// once it has had as many claims as it held records after its last
	// sweep (at least 16), so
	// a sweep costs each claim at most one record visited, however large
	// the store: sweeping after a fixed count of claims cost a first
	// execution ~5 record visits (cache misses) per claim at 300,000
	// records, and more as the store grew. Expired records then at most
	// double a shard before it is swept.
	if sh.claims++; sh.claims >= sh.nextSweep && now >= sh.sweepAt {
		s.sweep(sh, now, key)
		sh.claims, sh.nextSweep = 0, max(16, len(sh.m))
	}
	return nil
}

// advanceOrder checks an ordered claim against its entity's last accepted
// event time and moves the entity forward to the claim's. It returns false,
// with *res set, for a claim out of order; r is the key's record, if any.
// Caller holds order.mu.
func advanceOrder(order *orderShard, r *memRecord, req *idemstore.ClaimRequest, now instant, res *idemstore.ClaimResult) bool {
	o, ok := order.m[req.Order.Key]
	if ok && now < o.expiresAt {
		if !req.Order.Override && req.Order.At.Before(o.last.Add(-req.Order.Grace)) {
			var fence uint64
			if r != nil {
				fence = r.Fence
			}
			*res = idemstore.ClaimResult{Status: idemstore.ClaimOutOfOrder, Fence: fence, LastAccepted: o.last}
			return false
		}
		if o.last.After(req.Order.At) {
			req.Order.At = o.last // only ever forward
		}
	}
	order.m[req.Order.Key] = orderRecord{last: req.Order.At, expiresAt: now.add(max(req.TTL, req.Lease))}
	return true
}

// expires notes that a record of sh now expires at t (see sweepAt).
// Caller holds sh.mu.
func (sh *memShard) expires(t instant) {
	sh.sweepAt = min(sh.sweepAt, t)
}

// sweep drops records that are no longer live, except keep's, and sets
// sh.sweepAt to the earliest expiry among those left. Caller holds sh.mu.
func (s *Store) sweep(sh *memShard, now instant, keep string) int {
	n := 0
	next := never
	for k, r := range sh.m {
		// live first: comparing every key with keep was most of a
		// sweep's time (store keys share long prefixes).
		if !live(r, now) && r.wake == nil && k != keep {
			delete(sh.m, k)
			r.gone = true
			s.bytes.Add(-r.size)
			n++
		} else {
			next = min(next, r.ExpiresAt)
		}
	}
	sh.sweepAt = next
	s.count.Add(-int64(n))
	return n
}

// Cleanup removes every record that is no longer live and returns how many.
func (s *Store) Cleanup(ctx context.Context) (int, error) {
	now := s.clock()
	total := 0
	for i := range s.shards {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		sh := &s.shards[i]
		sh.mu.Lock()
		total += s.sweep(sh, now, "")
		sh.mu.Unlock()
		o := &s.orders[i]
		o.mu.Lock()
		for k, r := range o.m {
			if now >= r.expiresAt {
				delete(o.m, k)
			}
		}
		o.mu.Unlock()
	}
	return total, nil
}

// List calls fn with every record whose key starts with prefix.
func (s *Store) List(ctx context.Context, prefix string, fn func(idemstore.Record) error) error {
	for i := range s.shards {
		if err := ctx.Err(); err != nil {
			return err
		}
		sh := &s.shards[i]
		sh.mu.Lock()
		var batch []idemstore.Record
		for k, r := range sh.m {
			if strings.HasPrefix(k, prefix) && r.State != idemstore.StateAbsent {
				out := s.record(r)
				out.Result = append([]byte(nil), r.Result...)
				out.Steps = maps.Clone(r.Steps)
				batch = append(batch, out)
			}
		}
		sh.mu.Unlock()
		for _, r := range batch { // fn runs unlocked: it may call the store
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// ForceRelease releases key whatever its owner and bumps its fence.
func (s *Store) ForceRelease(ctx context.Context, key string) (idemstore.Record, error) {
	sh, r, now, err := s.lockLive(ctx, key)
	if err != nil {
		return idemstore.Record{}, err
	}
	defer sh.mu.Unlock()
	keep := time.Duration(r.ExpiresAt - r.UpdatedAt)
	r.State = idemstore.StateReleased
	r.Owner = idemstore.Token{}
	r.Fence++
	r.Result, r.value = nil, nil
	r.dropItems()
	s.resize(r)
	r.ExpiresAt = now.add(max(keep, 0))
	sh.expires(r.ExpiresAt)
	r.UpdatedAt = now
	s.wakeAll(r)
	out := s.record(r)
	out.Steps = maps.Clone(r.Steps)
	return out, nil
}

// Len returns the number of records held, live or not yet swept.
func (s *Store) Len() int { return int(s.count.Load()) }

func (s *Store) wakeAll(r *memRecord) {
	if r.wake != nil {
		close(r.wake)
		r.wake = nil
	}
}

// lockOwned locks l's shard and returns it with the record l still owns.
// On an error it leaves the shard unlocked.
func (s *Store) lockOwned(ctx context.Context, l idemstore.Lease) (*memShard, *memRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	sh := s.shard(l.Key)
	sh.mu.Lock()
	r := sh.m[l.Key]
	if r == nil || r.State != idemstore.StateInProgress || r.Owner != l.Owner || r.Fence != l.Fence {
		sh.mu.Unlock()
		return nil, nil, fmt.Errorf("%w: %s fence %d", idem.ErrLeaseLost, l.Key, l.Fence)
	}
	return sh, r, nil
}

// lockLive locks key's shard and returns it with key's record, which is
// live at now; a record past its retention is gone (idem.ErrNotFound).
// On an error it leaves the shard unlocked.
func (s *Store) lockLive(ctx context.Context, key string) (*memShard, *memRecord, instant, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, 0, err
	}
	now := s.clock()
	sh := s.shard(key)
	sh.mu.Lock()
	r := sh.m[key]
	if r == nil || r.State == idemstore.StateAbsent || !live(r, now) {
		sh.mu.Unlock()
		return nil, nil, 0, fmt.Errorf("%w: %s", idem.ErrNotFound, key)
	}
	return sh, r, now, nil
}

// Heartbeat implements idemstore.Store.
func (s *Store) Heartbeat(ctx context.Context, l idemstore.Lease) error {
	sh, r, err := s.lockOwned(ctx, l)
	if err != nil {
		return err
	}
	defer sh.mu.Unlock()
	now := s.clock()
	keep := r.ttlAfterLease()
	r.LeaseUntil = now.add(l.Duration)
	r.ExpiresAt = r.LeaseUntil.add(keep)
	sh.expires(r.ExpiresAt)
	r.UpdatedAt = now
	return nil
}

func (s *Store) finish(ctx context.Context, l idemstore.Lease, state idemstore.State, res idemstore.Result) error {
	sh, r, err := s.lockOwned(ctx, l)
	if err != nil {
		return err
	}
	defer sh.mu.Unlock()
	now := s.clock()
	if n := int64(recordOverhead+len(l.Key)+len(res.Data)) + r.streamBytes(); n > s.maxBytes {
		return fmt.Errorf("%w: %d bytes, the store holds %d in all", idem.ErrResultTooLarge, n, s.maxBytes)
	}
	r.State = state
	// The store keeps res.Data as given (the Guard's freshly encoded
	// bytes), not a copy: one copy of a result, not two.
	r.Result = res.Data
	if len(r.Result) == 0 {
		r.Result = nil // as every other store returns an empty result
	}
	r.value = res.Value
	if state == idemstore.StateReleased || len(res.Data) > keepValueMax {
		r.value = nil
	}
	if state == idemstore.StateReleased {
		r.Result = nil
		r.dropItems()
	}
	s.resize(r)
	r.ExpiresAt = now.add(l.TTL)
	sh.expires(r.ExpiresAt)
	r.UpdatedAt = now
	s.wakeAll(r)
	return nil
}

// Complete implements idemstore.Store.
func (s *Store) Complete(ctx context.Context, l idemstore.Lease, res idemstore.Result) error {
	return s.finish(ctx, l, idemstore.StateCompleted, res)
}

// Fail implements idemstore.Store.
func (s *Store) Fail(ctx context.Context, l idemstore.Lease, res idemstore.Result) error {
	return s.finish(ctx, l, idemstore.StateFailed, res)
}

// stepOverhead is what Bytes counts for a step besides its name and data.
const stepOverhead = 64

// SaveStep records a step of the call l owns (see idemstore.Stepper).
func (s *Store) SaveStep(ctx context.Context, l idemstore.Lease, name string, data []byte) error {
	sh, r, err := s.lockOwned(ctx, l)
	if err != nil {
		return err
	}
	defer sh.mu.Unlock()
	if _, ok := r.Steps[name]; ok {
		return nil
	}
	if n := int64(stepOverhead+len(name)+len(data)) + r.size; n > s.maxBytes {
		return fmt.Errorf("%w: step %q makes the record %d bytes, the store holds %d in all", idem.ErrResultTooLarge, name, n, s.maxBytes)
	}
	if r.Steps == nil {
		r.Steps = make(map[string][]byte)
	}
	r.Steps[name] = bytes.Clone(data)
	s.resize(r)
	return nil
}

// Release implements idemstore.Store.
func (s *Store) Release(ctx context.Context, l idemstore.Lease) error {
	return s.finish(ctx, l, idemstore.StateReleased, idemstore.Result{})
}

// Get implements idemstore.Store.
func (s *Store) Get(ctx context.Context, key string) (idemstore.Record, error) {
	sh, r, _, err := s.lockLive(ctx, key)
	if err != nil {
		return idemstore.Record{}, err
	}
	defer sh.mu.Unlock()
	out := s.record(r)
	out.Result = append([]byte(nil), r.Result...)
	out.Steps = maps.Clone(r.Steps)
	return out, nil
}

// Delete implements idemstore.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	r := sh.m[key]
	if r == nil {
		return fmt.Errorf("%w: %s", idem.ErrNotFound, key)
	}
	s.wakeAll(r)
	delete(sh.m, key)
	r.gone = true
	s.count.Add(-1)
	s.bytes.Add(-r.size)
	return nil
}

// Wait implements idemstore.Store.
func (s *Store) Wait(ctx context.Context, key string) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		sh := s.shard(key)
		sh.mu.Lock()
		r := sh.m[key]
		if r == nil || r.State != idemstore.StateInProgress || s.clock() >= r.LeaseUntil {
			sh.mu.Unlock()
			return nil
		}
		if r.wake == nil {
			r.wake = make(chan struct{})
		}
		wake := r.wake
		sh.mu.Unlock()
		// Then re-check: a takeover also wakes waiters.
		if err := s.pause(ctx, wake); err != nil {
			return err
		}
	}
}

// pause waits until wake is closed, the poll interval has passed, or ctx
// is done (its error).
func (s *Store) pause(ctx context.Context, wake chan struct{}) error {
	t := time.NewTimer(s.poll)
	defer t.Stop()
	select {
	case <-wake:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
