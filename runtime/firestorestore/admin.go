package firestorestore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

var _ idemstore.Admin = (*Store)(nil)

// List implements idemstore.Admin: it reads the collection's records whose key
// starts with prefix, in key order (a document ID range). A document in
// the range that is not a valid record does not stop the listing; List
// returns an error naming every one (wrapping idem.ErrCorruptRecord) at
// the end, as the other stores do. An error from fn stops it at once and
// is returned.
func (s *Store) List(ctx context.Context, prefix string, fn func(idemstore.Record) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	start := "k" + escape(prefix)
	it := s.coll.OrderBy(firestore.DocumentID, firestore.Asc).StartAt(start).Documents(ctx)
	defer it.Stop()
	var corrupted []error
	for {
		snap, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return s.opError(ctx, "list", prefix, err)
		}
		if !strings.HasPrefix(snap.Ref.ID, start) {
			break // past the prefix's range
		}
		key, ok := keyOf(snap.Ref.ID)
		if !ok {
			corrupted = append(corrupted, fmt.Errorf("%w: firestorestore: document %s is no record's ID", idem.ErrCorruptRecord, snap.Ref.ID))
			continue
		}
		d, err := decode(key, snap)
		if err != nil {
			corrupted = append(corrupted, err)
			continue
		}
		if err := fn(d.rec); err != nil {
			return err
		}
	}
	return errors.Join(corrupted...)
}

// ForceRelease implements idemstore.Admin: it releases key whatever its owner
// and bumps its fence (a preconditioned Update after a read), so a
// still-running owner can neither heartbeat nor complete; waiters wake.
// A write the server cancelled is sent again after a fresh read, as
// Claim's are: where the cancelled one was applied, the fence moves on
// twice, which no owner can tell from once.
func (s *Store) ForceRelease(ctx context.Context, key string) (idemstore.Record, error) {
	s.hint.Drop(key) // the next claim of key is likely a new run
	if err := ctx.Err(); err != nil {
		return idemstore.Record{}, err
	}
	id, err := docID(key)
	if err != nil {
		return idemstore.Record{}, err
	}
	ref := s.coll.Doc(id)
	var retry transientRetry
	for round := 1; round <= maxClaimRounds; round++ {
		d, ok, note, err := s.readLive(ctx, ref, key, "force release")
		if err == nil && !ok {
			err = fmt.Errorf("firestorestore: %s%s: %w", key, note, idem.ErrNotFound)
		}
		if err != nil {
			return idemstore.Record{}, err
		}
		td := d.rec.ExpiresAt.Sub(d.rec.LeaseUntil)
		if d.rec.State != idemstore.StateInProgress {
			td = d.rec.ExpiresAt.Sub(d.rec.UpdatedAt)
		}
		wr, err := ref.Update(ctx, []firestore.Update{
			{Path: fState, Value: int64(idemstore.StateReleased)},
			{Path: fFence, Value: int64(d.rec.Fence + 1)},
			{Path: fResult, Value: firestore.Delete},
			{Path: fTTLDur, Value: int64(td)},
			{Path: fTTL, Value: s.ttlValue(td)},
			{Path: fClaimed, Value: d.rec.ClaimedAt},
			{Path: fOwner, Value: make([]byte, len(idemstore.Token{}))}, // no owner
			{Path: fLeaseUntil, Value: timeOrDelete(d.rec.LeaseUntil)},
		}, firestore.LastUpdateTime(d.updateTime))
		if status.Code(err) == codes.FailedPrecondition || retry.again(ctx, err) {
			continue
		}
		if err != nil {
			return idemstore.Record{}, s.opError(ctx, "force release", key, err)
		}
		r := d.rec
		r.State, r.Fence, r.Result, r.Owner = idemstore.StateReleased, r.Fence+1, nil, idemstore.Token{}
		r.UpdatedAt, r.ExpiresAt = wr.UpdateTime, wr.UpdateTime.Add(td)
		return r, nil
	}
	return idemstore.Record{}, fmt.Errorf("%w: firestorestore: force release %q: the document kept changing under %d attempts",
		idem.ErrStoreUnavailable, key, maxClaimRounds)
}

// Cleanup implements idemstore.Admin: it deletes the records that are no longer
// live, for the emulator (which has no TTL sweeper) and for databases
// without a TTL policy on the ttl field. Candidates come from a query on
// the ttl field; each is judged by Firestore's clock (its update time
// against the query's read time) and deleted with its update time as the
// precondition, so a record claimed again meanwhile stays. Documents that
// are not records are left alone.
func (s *Store) Cleanup(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	// ttl = writer's now + life + margin: every record whose life ended by
	// our clock has ttl <= now + margin.
	it := s.coll.Where(fTTL, "<=", s.now().Add(s.ttlMargin)).Documents(ctx)
	defer it.Stop()
	n := 0
	for {
		snap, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return n, nil
		}
		if err != nil {
			return n, s.opError(ctx, "cleanup", "", err)
		}
		key, ok := keyOf(snap.Ref.ID)
		if !ok {
			continue
		}
		d, err := decode(key, snap)
		if err != nil || snap.ReadTime.Before(d.rec.ExpiresAt) {
			continue
		}
		deleted, err := s.deleteExpired(ctx, snap.Ref, d.updateTime)
		if err != nil {
			return n, s.opError(ctx, "cleanup", key, err)
		}
		if deleted {
			n++
		}
	}
}

// deleteExpired deletes the expired record ref if it is still as read
// (its update time), sending a delete the server cancelled again; false
// when it changed or went meanwhile. After a cancelled try, a document
// that is gone counts as deleted: that try may have applied, and its
// re-send then fails its precondition.
func (s *Store) deleteExpired(ctx context.Context, ref *firestore.DocumentRef, updated time.Time) (bool, error) {
	retried, err := deleteDoc(ctx, ref, firestore.LastUpdateTime(updated))
	switch code := status.Code(err); {
	case code == codes.OK:
		return true, nil
	case (code == codes.FailedPrecondition || code == codes.NotFound) && retried:
		_, err := ref.Get(ctx)
		if status.Code(err) == codes.NotFound {
			return true, nil
		}
		return false, err
	case code == codes.FailedPrecondition, code == codes.NotFound:
		return false, nil
	}
	return false, err
}

// timeOrDelete is t as a field value, or the field's removal for the zero
// time.
func timeOrDelete(t time.Time) any {
	if t.IsZero() {
		return firestore.Delete
	}
	return t
}
