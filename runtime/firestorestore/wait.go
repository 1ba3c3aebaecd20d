package firestorestore

import (
	"context"
	"math/rand/v2"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Wait blocks until key has no in-progress record whose lease still holds.
// It reads the document once; if it must wait, it listens to the document
// (DocumentRef.Snapshots), which wakes it on the write that finishes,
// releases or deletes the record, and also wakes at the lease's expiry.
// Should the listener stall or fail, it still polls the document, backing
// off from the first poll interval to the cap, so a lost notification
// delays a waiter but never hangs it.
func (s *Store) Wait(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	id, err := docID(key)
	if err != nil {
		return err
	}
	ref := s.coll.Doc(id)
	snap, err := s.read(ctx, "wait", key, ref)
	if err != nil {
		return err
	}
	done, until, err := waitDone(key, snap)
	if done || err != nil {
		return err
	}

	lctx, stop := context.WithCancel(ctx)
	snaps := make(chan *firestore.DocumentSnapshot, 1)
	exited := make(chan struct{})
	go listen(lctx, ref, snaps, exited)
	defer func() {
		stop()
		<-exited
	}()

	interval := s.pollMin
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		// Sleep the poll interval with ±25% jitter, but not past the
		// lease's expiry (read time-relative, so clocks do not matter).
		d := interval*3/4 + rand.N(interval/2+1)
		if until < d {
			d = max(until, time.Millisecond)
		}
		interval = min(interval*3/2, s.pollMax)
		timer.Reset(d)
		var snap *firestore.DocumentSnapshot
		select {
		case <-ctx.Done():
			return ctx.Err()
		case snap = <-snaps:
		case <-timer.C:
			var err error
			if snap, err = s.read(ctx, "wait", key, ref); err != nil {
				return err
			}
		}
		if done, until, err = waitDone(key, snap); done || err != nil {
			return err
		}
	}
}

// read is one bounded read of ref; an absent document is a snapshot
// that does not exist, not an error.
func (s *Store) read(ctx context.Context, op, key string, ref *firestore.DocumentRef) (*firestore.DocumentSnapshot, error) {
	rctx, cancel := s.bound(ctx)
	defer cancel()
	var retry transientRetry
	for {
		snap, err := ref.Get(rctx)
		if err != nil && status.Code(err) != codes.NotFound {
			if retry.again(rctx, err) {
				continue
			}
			return nil, s.opError(rctx, op, key, err)
		}
		return snap, nil
	}
}

// waitDone judges a snapshot for Wait: done when there is no in-progress
// record whose lease holds at the snapshot's read time; otherwise until is
// how long the lease still runs.
func waitDone(key string, snap *firestore.DocumentSnapshot) (done bool, until time.Duration, err error) {
	if snap == nil || !snap.Exists() {
		return true, 0, nil
	}
	d, err := decode(key, snap)
	if err != nil {
		return false, 0, err
	}
	r := &d.rec
	if r.State != idemstore.StateInProgress || !snap.ReadTime.Before(r.LeaseUntil) {
		return true, 0, nil
	}
	return false, r.LeaseUntil.Sub(snap.ReadTime), nil
}

// listen forwards the document's snapshots, keeping only the newest one
// unread, until ctx is canceled or the listener fails (the waiter then
// polls).
func listen(ctx context.Context, ref *firestore.DocumentRef, out chan *firestore.DocumentSnapshot, exited chan<- struct{}) {
	defer close(exited)
	it := ref.Snapshots(ctx)
	defer it.Stop()
	for {
		snap, err := it.Next()
		if err != nil {
			return
		}
		select {
		case out <- snap:
		default:
			select { // replace the unread one
			case <-out:
			default:
			}
			select {
			case out <- snap:
			default:
			}
		}
	}
}
