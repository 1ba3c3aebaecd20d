package firestorestore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/replayhint"
	"github.com/idemgen/idemgen/runtime/internal/stepkey"
)

// ErrDocumentTooLarge: a result does not fit in a Firestore document
// (1 MiB). The store returns it from Complete and Fail before sending
// anything. It wraps idem.ErrResultTooLarge, on which the Guard records the
// call as failed so that duplicates do not run the function again.
var ErrDocumentTooLarge = fmt.Errorf("firestorestore: record exceeds Firestore's 1 MiB document limit: %w", idem.ErrResultTooLarge)

// MaxDocumentSize is Firestore's document size limit in bytes.
const MaxDocumentSize = 1 << 20

// Store is an idemstore.Store on a Firestore collection. It is safe for
// concurrent use.
type Store struct {
	client *firestore.Client
	coll   *firestore.CollectionRef
	name   string // the collection's ID, for errors

	createFirst bool
	opTimeout   time.Duration
	ttlMargin   time.Duration
	now         func() time.Time // the caller's clock: the ttl field only
	pollMin     time.Duration
	pollMax     time.Duration

	// written remembers the update time of this store's last write to a
	// lease it holds, so a fenced write is one preconditioned Update. See
	// leaseCache.
	written leaseCache

	// hint: a replay is answered by a read. Claim reads the document
	// first by default, so a replay (a live record completed or failed
	// with the claim's fingerprint) is one Get and no write. With
	// WithCreateFirst a claim tries a Create first, a write refused on a
	// stored key: there a key the hint names (claimed or finished lately)
	// reads first, and a new key keeps its one-round-trip Create.
	hint replayhint.Recent
}

// Option configures a Store.
type Option func(*config)

type config struct {
	createFirst      bool
	opTimeout        time.Duration
	ttlMargin        time.Duration
	now              func() time.Time
	pollMin, pollMax time.Duration
}

// WithCreateFirst makes Claim try to create the document before reading
// it: a first execution then costs two round trips (Create, Complete)
// instead of three. A replay of a key this store claimed lately is one Get
// as by default; of another, two (the failed Create, Get). Choose it when
// most keys are new; the default suits duplicates.
func WithCreateFirst() Option { return func(c *config) { c.createFirst = true } }

// WithOperationTimeout bounds each Store method's calls to Firestore
// (default DefaultOperationTimeout; Wait bounds each of its reads, not the
// wait). The client retries an unavailable server until its context
// ends, so without a bound a caller with no deadline would wait out an
// outage instead of failing closed: past the timeout the method returns
// an error wrapping idem.ErrStoreUnavailable.
func WithOperationTimeout(d time.Duration) Option { return func(c *config) { c.opTimeout = d } }

// DefaultOperationTimeout is the operation timeout unless
// WithOperationTimeout says otherwise.
const DefaultOperationTimeout = 10 * time.Second

// WithTTLMargin sets how much later than the record's expiry, by the
// writer's clock, the ttl field tells Firestore's TTL policy to delete the
// document (default DefaultTTLMargin): the margin keeps a writer whose
// clock runs behind from having a record deleted while it is live.
func WithTTLMargin(d time.Duration) Option { return func(c *config) { c.ttlMargin = d } }

// WithClock replaces time.Now as the clock the ttl field is computed from
// (tests). Leases and expiry are judged by Firestore's clock, not by it.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithPollInterval sets Wait's fallback polling: the first interval and
// the cap it backs off to (defaults 50ms and 1s). The snapshot listener
// normally wakes a waiter first.
func WithPollInterval(first, max time.Duration) Option {
	return func(c *config) { c.pollMin, c.pollMax = first, max }
}

// DefaultTTLMargin is the ttl field's margin unless WithTTLMargin says
// otherwise.
const DefaultTTLMargin = time.Hour

// New returns a store keeping one document per key in collection (a
// top-level collection ID, or a path such as "services/billing/idem").
// It reads one document (of an ID no record uses), bounded by ctx and the
// operation timeout, so an
// unreachable server or missing permissions fail here with an error
// wrapping idem.ErrStoreUnavailable instead of on the first call. The
// store keeps no reference to ctx; the client stays the caller's to close.
func New(ctx context.Context, client *firestore.Client, collection string, opts ...Option) (*Store, error) {
	s, err := build(client, collection, opts)
	if err != nil {
		return nil, err
	}
	bctx, cancel := s.bound(ctx)
	defer cancel()
	_, err = s.coll.Doc(probeID).Get(bctx)
	if err != nil && status.Code(err) != codes.NotFound {
		return nil, fmt.Errorf("firestorestore: %w: collection %s: %w", idem.ErrStoreUnavailable, collection, err)
	}
	return s, nil
}

// probeID is the document New reads: record IDs all start with "k".
const probeID = "idem-reachability-probe"

func build(client *firestore.Client, collection string, opts []Option) (*Store, error) {
	if client == nil {
		return nil, errors.New("firestorestore: nil client")
	}
	if collection == "" {
		return nil, errors.New("firestorestore: empty collection")
	}
	c := config{opTimeout: DefaultOperationTimeout, ttlMargin: DefaultTTLMargin, now: time.Now, pollMin: 50 * time.Millisecond, pollMax: time.Second}
	for _, o := range opts {
		o(&c)
	}
	switch {
	case c.opTimeout <= 0:
		return nil, fmt.Errorf("firestorestore: operation timeout %v is not positive", c.opTimeout)
	case c.ttlMargin < 0:
		return nil, fmt.Errorf("firestorestore: negative TTL margin %v", c.ttlMargin)
	case c.pollMin <= 0 || c.pollMax < c.pollMin:
		return nil, fmt.Errorf("firestorestore: poll interval %v..%v is not a positive range", c.pollMin, c.pollMax)
	case c.now == nil:
		return nil, errors.New("firestorestore: nil clock")
	}
	coll := client.Collection(collection)
	if coll == nil {
		return nil, fmt.Errorf("firestorestore: %q is not a collection path (an odd number of segments)", collection)
	}
	return &Store{
		client: client, coll: coll, name: collection,
		createFirst: c.createFirst, opTimeout: c.opTimeout, ttlMargin: c.ttlMargin, now: c.now,
		pollMin: c.pollMin, pollMax: c.pollMax,
		written: leaseCache{m: map[leaseID]written{}},
	}, nil
}

// Collection is the collection the store keeps its documents in.
func (s *Store) Collection() *firestore.CollectionRef { return s.coll }

// maxClaimRounds bounds a claim's retries when the document changes
// between the read and the preconditioned write (another claimer won).
const maxClaimRounds = 8

// Claim reads the document and, when the key may be claimed, creates it
// (Exists: false) or overwrites it with its read update time as the
// precondition: another writer in between makes the write fail and the
// claim look again. See idemstore.Store.
func (s *Store) Claim(ctx context.Context, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	if err := ctx.Err(); err != nil {
		return idemstore.ClaimResult{}, err
	}
	id, err := docID(req.Key)
	if err != nil {
		return idemstore.ClaimResult{}, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	ref := s.coll.Doc(id)
	tryCreate := s.createFirst && !s.hint.Has(req.Key)
	var retry transientRetry
	for round := 1; round <= maxClaimRounds; round++ {
		if tryCreate {
			res, err := s.create(ctx, ref, req)
			if err == nil || status.Code(err) != codes.AlreadyExists {
				if err != nil && retry.again(ctx, err) {
					round-- // a create whose answer was lost is found by the next one
					continue
				}
				return res, err
			}
			tryCreate = false // someone made it: read it
		}
		snap, err := ref.Get(ctx)
		if status.Code(err) == codes.NotFound {
			tryCreate = true
			continue
		}
		if err != nil && retry.again(ctx, err) {
			round--
			continue
		}
		if err != nil {
			return idemstore.ClaimResult{}, s.opError(ctx, "claim", req.Key, err)
		}
		d, err := decode(req.Key, snap)
		if err != nil {
			return idemstore.ClaimResult{}, err
		}
		now := snap.ReadTime
		if r := &d.rec; r.State == idemstore.StateInProgress && r.Owner == req.Owner && r.Fingerprint == req.Fingerprint {
			// Our own claim: the client re-sent a create or update whose
			// reply was lost (it retries commits on Unavailable), and it
			// was applied. Owner tokens are unique per attempt, so no
			// other claim wrote this one.
			// The steps it kept are the document's.
			s.written.put(leaseID{req.Key, req.Owner, r.Fence}, written{d.updateTime, r.ClaimedAt, stepSizes(r.Steps)})
			return idemstore.ClaimResult{Status: idemstore.ClaimAcquired, Fence: r.Fence, LeaseUntil: r.LeaseUntil, Steps: r.Steps}, nil
		}
		verdict, own := claimVerdict(&d, req, now)
		if !own {
			if s.createFirst {
				s.hint.Note(req.Key, verdict.Status)
			}
			return verdict, nil
		}
		res, err := s.overwrite(ctx, ref, req, &d, verdict.Status, now)
		if err == nil {
			return res, nil
		}
		if retry.again(ctx, err) {
			// Applied or not, the next read tells: an applied overwrite
			// is found as our own claim above.
			round--
			continue
		}
		if c := status.Code(err); c != codes.FailedPrecondition && c != codes.NotFound {
			return idemstore.ClaimResult{}, s.opError(ctx, "claim", req.Key, err)
		}
		tryCreate = status.Code(err) == codes.NotFound
	}
	return idemstore.ClaimResult{}, fmt.Errorf("%w: firestorestore: claim %q: the document kept changing under %d attempts",
		idem.ErrStoreUnavailable, req.Key, maxClaimRounds)
}

// claimVerdict judges a claim against the record d read at now (the
// server's read time): the answer to return, or own=true with the status
// (acquired or taken over) a successful overwrite gives.
func claimVerdict(d *doc, req idemstore.ClaimRequest, now time.Time) (idemstore.ClaimResult, bool) {
	r := &d.rec
	if !now.Before(r.ExpiresAt) {
		// Past its retention: the key is free for any payload.
		return idemstore.ClaimResult{Status: idemstore.ClaimAcquired}, true
	}
	if r.Fingerprint != req.Fingerprint {
		return idemstore.ClaimResult{Status: idemstore.ClaimMismatch, Fence: r.Fence}, false
	}
	switch r.State {
	case idemstore.StateInProgress:
		if !now.Before(r.LeaseUntil) {
			return idemstore.ClaimResult{Status: idemstore.ClaimTakenOver}, true
		}
		return idemstore.ClaimResult{Status: idemstore.ClaimInProgress, Fence: r.Fence, LeaseUntil: r.LeaseUntil}, false
	case idemstore.StateCompleted:
		return idemstore.ClaimResult{Status: idemstore.ClaimCompleted, Fence: r.Fence, Result: idemstore.Result{Data: r.Result}}, false
	case idemstore.StateFailed:
		return idemstore.ClaimResult{Status: idemstore.ClaimFailed, Fence: r.Fence, Result: idemstore.Result{Data: r.Result}}, false
	}
	return idemstore.ClaimResult{Status: idemstore.ClaimAcquired}, true // released, same payload
}

// create writes a fresh record at fence 1 if there is no document.
func (s *Store) create(ctx context.Context, ref *firestore.DocumentRef, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	wr, err := ref.Create(ctx, s.claimFields(req, 1))
	if err != nil {
		if status.Code(err) == codes.AlreadyExists {
			return idemstore.ClaimResult{}, err
		}
		return idemstore.ClaimResult{}, s.opError(ctx, "claim", req.Key, err)
	}
	s.written.put(leaseID{req.Key, req.Owner, 1}, written{wr.UpdateTime, wr.UpdateTime, nil})
	return idemstore.ClaimResult{Status: idemstore.ClaimAcquired, Fence: 1, LeaseUntil: wr.UpdateTime.Add(req.Lease)}, nil
}

// overwrite claims over the record d, fence + 1, if the document has not
// changed since it was read. A record retained at now (an expired lease,
// a release) keeps its steps, and the claim returns them: the call
// resumes. A record past its retention loses them: a new call under the
// key must not see them.
func (s *Store) overwrite(ctx context.Context, ref *firestore.DocumentRef, req idemstore.ClaimRequest, d *doc, st idemstore.ClaimStatus, now time.Time) (idemstore.ClaimResult, error) {
	fence := d.rec.Fence + 1
	var steps map[string][]byte
	if now.Before(d.rec.ExpiresAt) {
		steps = d.rec.Steps
	}
	wr, err := ref.Update(ctx, toUpdates(s.claimFields(req, fence), steps != nil), firestore.LastUpdateTime(d.updateTime))
	if err != nil {
		return idemstore.ClaimResult{}, err
	}
	s.written.put(leaseID{req.Key, req.Owner, fence}, written{wr.UpdateTime, wr.UpdateTime, stepSizes(steps)})
	return idemstore.ClaimResult{Status: st, Fence: fence, LeaseUntil: wr.UpdateTime.Add(req.Lease), Steps: steps}, nil
}

// Heartbeat renews the lease: the document's update time, the lease's
// start, becomes the commit time.
func (s *Store) Heartbeat(ctx context.Context, l idemstore.Lease) error {
	return s.fenced(ctx, "heartbeat", l, idemstore.StateInProgress, nil, []firestore.Update{
		{Path: fLeaseDur, Value: int64(l.Duration)},
		{Path: fTTLDur, Value: int64(l.TTL)},
		{Path: fTTL, Value: s.ttlValue(l.Duration + l.TTL)},
	}, nil)
}

// Complete records the result under the lease.
func (s *Store) Complete(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	return s.finish(ctx, "complete", l, idemstore.StateCompleted, r.Data)
}

// Fail records a failure under the lease.
func (s *Store) Fail(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	return s.finish(ctx, "fail", l, idemstore.StateFailed, r.Data)
}

// Release gives the key up, keeping the document and its fence.
func (s *Store) Release(ctx context.Context, l idemstore.Lease) error {
	return s.finish(ctx, "release", l, idemstore.StateReleased, nil)
}

func (s *Store) finish(ctx context.Context, op string, l idemstore.Lease, state idemstore.State, data []byte) error {
	if size, max := docSize(l.Key, len(data)), MaxDocumentSize; size > max {
		return fmt.Errorf("%w: %s %q: a %d-byte result makes a document of up to %d bytes (limit %d; this key holds at most %d result bytes)",
			ErrDocumentTooLarge, op, l.Key, len(data), size, max, MaxResultSize(l.Key))
	}
	var res any = firestore.Delete
	if len(data) > 0 {
		res = data
	}
	updates := []firestore.Update{
		{Path: fState, Value: int64(state)},
		{Path: fResult, Value: res},
		{Path: fTTLDur, Value: int64(l.TTL)},
		{Path: fTTL, Value: s.ttlValue(l.TTL)},
	}
	if state != idemstore.StateReleased {
		// The result replays from now on: the steps go, and the result
		// has the whole document. A release keeps them for the call's
		// next run.
		updates = append(updates, firestore.Update{Path: fSteps, Value: firestore.Delete})
	}
	err := s.fenced(ctx, op, l, state, data, updates, nil)
	switch {
	case err != nil || !s.createFirst:
	case state == idemstore.StateReleased:
		s.hint.Drop(l.Key) // the next claim is likely a new run
	default:
		s.hint.Add(l.Key) // … likely a replay
	}
	return err
}

// SaveStep records a step of the call l owns (see idemstore.Stepper): an
// Update of the step's entry in the document's steps map, fenced as
// Heartbeat is (preconditioned on this store's last write to the lease,
// else on a read that shows the lease holds), so a stale owner gets
// idem.ErrLeaseLost and writes nothing. Like a heartbeat, the write
// restarts the lease, which runs from the document's update time. A step
// already recorded keeps its first data; one that would take the document
// over 1 MiB is ErrDocumentTooLarge.
func (s *Store) SaveStep(ctx context.Context, l idemstore.Lease, name string, data []byte) error {
	if data == nil {
		data = []byte{} // bytes, empty (a nil slice would be stored as null)
	}
	key := stepkey.Key(name)
	return s.fenced(ctx, "step", l, idemstore.StateInProgress, nil, []firestore.Update{
		{FieldPath: firestore.FieldPath{fSteps, key}, Value: data},
		{Path: fTTL, Value: s.ttlValue(l.Duration + l.TTL)},
	}, &pendingStep{name: name, key: key, size: len(data)})
}

// pendingStep is the step a fenced write records.
type pendingStep struct {
	name, key string
	size      int
}

// maxFencedRounds bounds a fenced write's retries when the document keeps
// changing while it stays this lease's (the owner's own concurrent
// heartbeat).
const maxFencedRounds = 8

// fenced applies updates if the document is still in progress under l's
// owner and fence: an Update preconditioned on the update time of the
// lease's last write this store made (no read), or, when that is unknown
// or stale, on the update time of a read that showed the lease still
// holds. state is the state the write sets, data the result it stores,
// step the step it records (nil for other writes): a step the document
// already holds is not written again, and one that would not fit is
// ErrDocumentTooLarge, both judged on a read that shows the lease holds
// (not on what the store remembers of the lease).
func (s *Store) fenced(ctx context.Context, op string, l idemstore.Lease, state idemstore.State, data []byte, updates []firestore.Update, step *pendingStep) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	id, err := docID(l.Key)
	if err != nil {
		return err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	ref := s.coll.Doc(id)
	lid := leaseID{l.Key, l.Owner, l.Fence}
	w, known := s.written.get(lid)
	var retry transientRetry
	for round := 1; ; round++ {
		read := !known
		if !known {
			var done bool
			if w, done, err = s.readLease(ctx, ref, op, l, state, data, &retry); err != nil || done {
				return err
			}
		}
		if step != nil {
			again, done, err := stepFits(l, step, w, read)
			if again {
				known = false // tell the owner first: read
				continue
			}
			if done || err != nil {
				return err
			}
		}
		up := append(updates[:len(updates):len(updates)], firestore.Update{Path: fClaimed, Value: w.claimed})
		if state != idemstore.StateInProgress {
			// The lease ran from the owner's last write; kept for
			// inspection once the record is finished.
			up = append(up, firestore.Update{Path: fLeaseUntil, Value: w.at.Add(l.Duration)})
		}
		wr, err := ref.Update(ctx, up, firestore.LastUpdateTime(w.at))
		if err == nil {
			if state == idemstore.StateInProgress {
				steps := w.steps
				if step != nil {
					steps = make(map[string]int, len(w.steps)+1)
					maps.Copy(steps, w.steps)
					steps[step.key] = step.size
				}
				s.written.put(lid, written{wr.UpdateTime, w.claimed, steps})
			} else {
				s.written.drop(lid)
			}
			return nil
		}
		switch status.Code(err) {
		case codes.FailedPrecondition:
			if round >= maxFencedRounds {
				return fmt.Errorf("%w: firestorestore: %s %q: the document kept changing under %d attempts",
					idem.ErrStoreUnavailable, op, l.Key, maxFencedRounds)
			}
			known = false // someone wrote: read who
		case codes.NotFound:
			s.written.drop(lid)
			return fmt.Errorf("%w: %s fence %d (the document is gone)", idem.ErrLeaseLost, l.Key, l.Fence)
		default:
			if retry.again(ctx, err) {
				// The same preconditioned write again: if the first was
				// applied, its precondition fails and the read finds our
				// own write.
				round--
				continue
			}
			if step != nil && tooLarge(err) {
				return fmt.Errorf("%w: step %q of %q (%d bytes): %w", ErrDocumentTooLarge, step.name, l.Key, step.size, err)
			}
			return s.opError(ctx, op, l.Key, err)
		}
	}
}

// readLease reads the document a fenced write is about: the lease as
// written, or done when the write is our own earlier attempt, applied
// (its reply lost), or the lease is lost (an error).
func (s *Store) readLease(ctx context.Context, ref *firestore.DocumentRef, op string, l idemstore.Lease, state idemstore.State, data []byte, retry *transientRetry) (w written, done bool, err error) {
	lid := leaseID{l.Key, l.Owner, l.Fence}
	for {
		snap, err := ref.Get(ctx)
		if status.Code(err) == codes.NotFound {
			return w, false, fmt.Errorf("%w: %s fence %d (the document is gone)", idem.ErrLeaseLost, l.Key, l.Fence)
		}
		if err != nil && retry.again(ctx, err) {
			continue
		}
		if err != nil {
			return w, false, s.opError(ctx, op, l.Key, err)
		}
		d, err := decode(l.Key, snap)
		if err != nil {
			return w, false, fmt.Errorf("%w: %s fence %d (%w)", idem.ErrLeaseLost, l.Key, l.Fence, err)
		}
		r := &d.rec
		if r.Owner != l.Owner || r.Fence != l.Fence || r.State != idemstore.StateInProgress {
			s.written.drop(lid)
			if state != idemstore.StateInProgress && r.Owner == l.Owner && r.Fence == l.Fence &&
				r.State == state && string(r.Result) == string(data) {
				return w, true, nil // our own earlier attempt was applied and its reply lost
			}
			return w, false, fmt.Errorf("%w: %s fence %d (the document is %s at fence %d)", idem.ErrLeaseLost, l.Key, l.Fence, r.State, r.Fence)
		}
		return written{at: d.updateTime, claimed: r.ClaimedAt, steps: stepSizes(r.Steps)}, false, nil
	}
}

// stepFits judges a SaveStep's step against the lease as written: again
// when that is remembered, not read, and the step is recorded or too
// large (read and judge again: the lease may be lost); done when the
// document holds the step already; ErrDocumentTooLarge when it would not
// fit.
func stepFits(l idemstore.Lease, step *pendingStep, w written, read bool) (again, done bool, err error) {
	_, recorded := w.steps[step.key]
	size := docSize(l.Key, 0) + stepsSize(w.steps) + stepSize(step.key, step.size)
	if !recorded {
		size += len(fSteps) + 1 // the map's own field, if it is the first step
	}
	switch {
	case (recorded || size > MaxDocumentSize) && !read:
		return true, false, nil
	case recorded:
		return false, true, nil
	case size > MaxDocumentSize:
		return false, false, fmt.Errorf("%w: step %q of %q: a %d-byte result makes a document of up to %d bytes (limit %d)",
			ErrDocumentTooLarge, step.name, l.Key, step.size, size, MaxDocumentSize)
	}
	return false, false, nil
}

// maxTransientRetries bounds how often one Store call re-sends a request
// the server cancelled or aborted while the caller still waited.
const maxTransientRetries = 4

// transientRetry counts one Store call's retries of transient failures.
type transientRetry struct{ n int }

// again reports whether err is a failure worth one more try, after a
// short backoff: the server answered Canceled or Aborted while ctx is
// still live (the Firestore emulator cancels calls under load, "call
// already cancelled"), at most maxTransientRetries times. The client
// library retries Unavailable itself. Every write the store sends is
// preconditioned (Create, or Update on an update time), so a request
// that was applied before its answer was lost fails its precondition
// when re-sent, and the read that follows finds the store's own write.
func (r *transientRetry) again(ctx context.Context, err error) bool {
	if ctx.Err() != nil || r.n >= maxTransientRetries {
		return false
	}
	switch status.Code(err) {
	case codes.Canceled, codes.Aborted:
	default:
		return false
	}
	r.n++
	t := time.NewTimer(time.Duration(r.n*r.n) * 10 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Get returns the live record for key (a strongly consistent read).
func (s *Store) Get(ctx context.Context, key string) (idemstore.Record, error) {
	if err := ctx.Err(); err != nil {
		return idemstore.Record{}, err
	}
	id, err := docID(key)
	if err != nil {
		return idemstore.Record{}, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	d, ok, note, err := s.readLive(ctx, s.coll.Doc(id), key, "get")
	if err == nil && !ok {
		err = fmt.Errorf("%w: %s%s", idem.ErrNotFound, key, note)
	}
	return d.rec, err
}

// readLive reads key's document through ref and decodes it. ok is false
// when it holds no live record: none, or one past its retention by the
// read's time, which note (" (expired)") adds to the caller's
// ErrNotFound.
func (s *Store) readLive(ctx context.Context, ref *firestore.DocumentRef, key, op string) (d doc, ok bool, note string, err error) {
	snap, err := ref.Get(ctx)
	if status.Code(err) == codes.NotFound {
		return doc{}, false, "", nil
	}
	if err != nil {
		return doc{}, false, "", s.opError(ctx, op, key, err)
	}
	if d, err = decode(key, snap); err != nil {
		return doc{}, false, "", err
	}
	if !snap.ReadTime.Before(d.rec.ExpiresAt) {
		return doc{}, false, " (expired)", nil
	}
	return d, true, "", nil
}

// Delete removes the document whatever its state (the next claim starts
// again at fence 1).
func (s *Store) Delete(ctx context.Context, key string) error {
	s.hint.Drop(key) // the next claim of key is likely a new run
	if err := ctx.Err(); err != nil {
		return err
	}
	id, err := docID(key)
	if err != nil {
		return err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	retried, err := deleteDoc(ctx, s.coll.Doc(id), firestore.Exists)
	switch {
	case err == nil:
		return nil
	case status.Code(err) == codes.NotFound && retried:
		// A try the server cancelled may have applied before its
		// answer was lost: the document is gone either way.
		return nil
	case status.Code(err) == codes.NotFound:
		return fmt.Errorf("%w: %s", idem.ErrNotFound, key)
	}
	return s.opError(ctx, "delete", key, err)
}

// deleteDoc deletes ref under the precondition pre, sending a delete the
// server cancelled again (transientRetry); retried says a try was
// cancelled, which may have applied before its answer was lost.
func deleteDoc(ctx context.Context, ref *firestore.DocumentRef, pre firestore.Precondition) (retried bool, err error) {
	var retry transientRetry
	for {
		_, err = ref.Delete(ctx, pre)
		if err == nil || !retry.again(ctx, err) {
			return retry.n > 0, err
		}
	}
}

// opError wraps a client error: a ctx error as itself (the caller gave
// up), anything else as idem.ErrStoreUnavailable.
func (s *Store) opError(ctx context.Context, op, key string, err error) error {
	if errors.Is(context.Cause(ctx), errOpTimeout) {
		return fmt.Errorf("%w: firestorestore: %s %q in collection %s: no answer within %v: %w",
			idem.ErrStoreUnavailable, op, key, s.name, s.opTimeout, err)
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("firestorestore: %s %q: %w (%v)", op, key, cerr, err)
	}
	return fmt.Errorf("%w: firestorestore: %s %q in collection %s: %w", idem.ErrStoreUnavailable, op, key, s.name, err)
}

// errOpTimeout is the cause of a bound's deadline, which tells the
// store's own timeout from the caller's.
var errOpTimeout = errors.New("firestorestore: operation timeout")

// bound limits ctx to the operation timeout.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, s.opTimeout, errOpTimeout)
}

// ttlValue is the ttl field for a record that stays live for d after this
// write, by the caller's clock, plus the margin.
func (s *Store) ttlValue(d time.Duration) time.Time { return s.now().Add(d + s.ttlMargin) }

// leaseID names one lease: a key under one owner and fence.
type leaseID struct {
	key   string
	owner idemstore.Token
	fence uint64
}

// written is what a store remembers of a lease it holds: the update time
// of its last write, the claim's (commit) time, and the steps the
// document holds as of that write, by map key and data length (never
// modified: a new step makes a new map).
type written struct {
	at, claimed time.Time
	steps       map[string]int
}

// tooLarge reports whether err is Firestore's refusal of a document over
// its size limit (which the store's bound normally keeps it from
// sending).
func tooLarge(err error) bool {
	return status.Code(err) == codes.InvalidArgument && strings.Contains(status.Convert(err).Message(), "maximum allowed size")
}

// leaseCache maps the leases this store holds to the update time of its
// last write to each, so that a fenced write is one Update preconditioned
// on that time: the document is unchanged since this owner's own write,
// so it still holds this owner, fence and state. An entry lost (evicted,
// another process, a write whose reply was lost) costs one read instead.
// It is bounded: a crashed caller's leases are never finished here.
type leaseCache struct {
	mu sync.Mutex
	m  map[leaseID]written
}

// maxCachedLeases bounds the cache; past it an arbitrary entry goes.
const maxCachedLeases = 1 << 14

func (c *leaseCache) get(id leaseID) (written, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.m[id]
	return t, ok
}

func (c *leaseCache) put(id leaseID, t written) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[id]; !ok && len(c.m) >= maxCachedLeases {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	// A concurrent heartbeat and completion of one lease: keep the later.
	if old, ok := c.m[id]; !ok || t.at.After(old.at) {
		c.m[id] = t
	}
}

func (c *leaseCache) drop(id leaseID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}

var (
	_ idemstore.Store   = (*Store)(nil)
	_ idemstore.Stepper = (*Store)(nil)
)
