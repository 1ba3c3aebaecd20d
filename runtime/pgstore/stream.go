package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Streamed results (idemstore.Streamer). A stream's items are rows of
// <table>_items (schema version 7), one per item, keyed by (key, fence,
// seq) and carrying the owner of the run that appended them. A record's
// items are the rows of its fence and owner: a claim that starts a new
// run moves the fence (and a fresh claim the owner) on, so the old run's
// items drop out of sight in the claim's own commit without the claim
// touching the items table. The claim is every call's hot path, and the
// ordered claim a plpgsql function a new schema version would have to
// replace; deleting there would cost every call a statement's worth of
// work for the few that stream. The new run's first append deletes the
// earlier runs' rows instead, and Delete and retention cleanup delete a
// record's items in the statement that deletes its row, so a key whose
// row is deleted and that starts again at fence 1 meets no old items.
//
// An append is one statement: it locks the record row FOR SHARE where it
// is in progress under the caller's owner and fence (a claim or finish
// waits for it, and it re-checks a row they changed), reads the run's
// last item (its seq and the running total of bytes), and inserts the
// item when it is the next and fits. A reader reads the record and its
// items in one statement, so one snapshot.
//
// A waiting reader sleeps on the store's one LISTEN connection, as Wait
// does: it marks the record (waiters, a compare-and-set on owner and
// fence), then reads again; appends and finishing writes of a marked
// record NOTIFY md5(key) on the table's channel. It also re-reads at the
// lease's end by the database clock and at least every poll interval.

var _ idemstore.Streamer = (*Store)(nil)

// MaxStreamBytes is how many bytes the items of one run may take in all
// (their data): 512 MiB, as the steps of a call. An append past it is
// refused with idem.ErrResultTooLarge and writes nothing.
const MaxStreamBytes = 512 << 20

// defaultReadMax is how many items a ReadStream returns when the request
// does not say.
const defaultReadMax = 256

// maxAppendAttempts bounds AppendItem's retries: it retries only when an
// append of the same item by the same owner committed after its snapshot
// (a re-sent request racing the first), which a fresh snapshot settles.
const maxAppendAttempts = 4

// streamQueries sets AppendItem's and ReadStream's statements.
func streamQueries(q *queries, sub func(string) string) {
	// $1 key, $2 owner, $3 fence, $4 seq, $5 data, $6 the run's byte
	// limit, $7 the NOTIFY channel. Returns whether the caller owns the
	// record, the run's item count and bytes before this item, whether
	// it was inserted, and whether item $4 already holds $5. An item of
	// the same key, fence and seq but another owner is left over from a
	// row deleted outside the store: the append overwrites it.
	q.appendItem = sub(`WITH rec AS (
	SELECT waiters FROM {T}
	WHERE key = $1::text AND owner = $2::bytea AND fence = $3::bigint AND state = 1
	FOR SHARE
), last AS (
	SELECT seq + 1 AS n, total FROM {I}
	WHERE key = $1::text AND fence = $3::bigint AND owner = $2::bytea
	ORDER BY seq DESC LIMIT 1
), run AS (
	SELECT coalesce((SELECT n FROM last), 0) AS n, coalesce((SELECT total FROM last), 0) AS total
), ins AS (
	INSERT INTO {I} AS i (key, fence, seq, owner, total, data)
	SELECT $1::text, $3::bigint, $4::bigint, $2::bytea, run.total + octet_length($5::bytea), $5::bytea
	FROM rec, run
	WHERE run.n = $4::bigint AND run.total + octet_length($5::bytea) <= $6::bigint
	ON CONFLICT (key, fence, seq) DO UPDATE SET owner = excluded.owner, total = excluded.total, data = excluded.data
	WHERE i.owner <> excluded.owner
	RETURNING 1
), old AS (
	DELETE FROM {I} WHERE key = $1::text AND fence <> $3::bigint AND $4::bigint = 0 AND EXISTS (SELECT 1 FROM ins)
)
SELECT EXISTS (SELECT 1 FROM rec), run.n, run.total, EXISTS (SELECT 1 FROM ins),
	(SELECT data = $5::bytea FROM {I} WHERE key = $1::text AND fence = $3::bigint AND owner = $2::bytea AND seq = $4::bigint),
	(SELECT pg_notify($7::text, md5($1::text)) IS NOT NULL FROM rec WHERE rec.waiters AND EXISTS (SELECT 1 FROM ins))
FROM run`)

	// $1 key, $2 time, $3 from, $4 max: the record with its run's item
	// count and items from $3 on, in one snapshot.
	q.readStream = sub(`SELECT r.state, r.owner, r.fence, r.fingerprint, r.result, r.lease_until, r.expires_at, r.format,
	r.waiters, coalesce($2::timestamptz, statement_timestamp()),
	coalesce((SELECT i.seq + 1 FROM {I} i WHERE i.key = r.key AND i.fence = r.fence AND i.owner = r.owner
		ORDER BY i.seq DESC LIMIT 1), 0),
	ARRAY(SELECT i.data FROM {I} i WHERE i.key = r.key AND i.fence = r.fence AND i.owner = r.owner
		AND i.seq >= $3::bigint ORDER BY i.seq LIMIT $4::bigint)
FROM {T} r WHERE r.key = $1::text`)
}

// AppendItem implements idemstore.Streamer: one statement, a
// compare-and-set on owner, fence and state like Complete, that inserts
// the item and NOTIFYs a reader waiting on the record.
func (s *Store) AppendItem(ctx context.Context, l idemstore.Lease, seq uint64, data []byte) error {
	const op = "append item"
	if n := int64(len(data)); n > s.maxStream {
		return s.itemTooLarge(l.Key, seq, n)
	}
	c, err := s.acquire(ctx, op)
	if err != nil {
		return err
	}
	defer c.Release()
	if data == nil {
		data = []byte{}
	}
	for range maxAppendAttempts {
		var (
			owned, inserted bool
			n, total        int64
			same, notified  *bool
		)
		err := c.QueryRow(ctx, s.q.appendItem, l.Key, l.Owner[:], int64(l.Fence), int64(seq), data, s.maxStream, s.n.channel).
			Scan(&owned, &n, &total, &inserted, &same, &notified)
		switch {
		case err != nil:
			return s.wrap(ctx, op, l.Key, err)
		case !owned:
			return fmt.Errorf("%w: %s fence %d", idem.ErrLeaseLost, l.Key, l.Fence)
		case inserted:
			return nil
		case seq < uint64(n) && same != nil && *same:
			return nil // re-sent
		case seq != uint64(n):
			return fmt.Errorf("pgstore: %s %s: %w", op, l.Key, idemstore.ItemOutOfPlace(seq, uint64(n)))
		case total+int64(len(data)) > s.maxStream:
			return s.itemTooLarge(l.Key, seq, total+int64(len(data)))
		}
		// Item seq was appended after this statement's snapshot: read again.
	}
	return fmt.Errorf("pgstore: %s %s: item %d kept changing under %d attempts", op, l.Key, seq, maxAppendAttempts)
}

// itemTooLarge is the error of item seq that would make key's run n bytes.
func (s *Store) itemTooLarge(key string, seq uint64, n int64) error {
	return fmt.Errorf("pgstore: item %d of %s: %w: the run's items would take %d bytes, at most %d", seq, key, idem.ErrResultTooLarge, n, s.maxStream)
}

// ReadStream implements idemstore.Streamer. A waiting read subscribes to
// the store's listener before it reads (a NOTIFY between its read and its
// sleep still wakes it) and holds no pool connection while it sleeps.
func (s *Store) ReadStream(ctx context.Context, req idemstore.StreamRead) (idemstore.StreamBatch, error) {
	if !req.Wait {
		b, _, err := s.readStream(ctx, &req)
		return b, err
	}
	if err := ctx.Err(); err != nil {
		return idemstore.StreamBatch{}, fmt.Errorf("pgstore: read stream %s: %w", req.Key, err)
	}
	s.lis.ensure()
	hash := keyHash(req.Key)
	w := s.lis.subscribe(hash)
	defer s.lis.unsubscribe(hash, w)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		b, d, err := s.readStream(ctx, &req)
		if err != nil || d == 0 {
			return b, err
		}
		poll := s.cfg.poll
		if !s.lis.up.Load() {
			poll = min(poll, unhealthyPoll)
		}
		t.Reset(min(d, poll))
		select {
		case <-w.ch:
		case <-t.C:
		case <-ctx.Done():
			return idemstore.StreamBatch{}, fmt.Errorf("pgstore: read stream %s: %w", req.Key, ctx.Err())
		}
		if !t.Stop() {
			select { // drain a fire that raced with the wake-up
			case <-t.C:
			default:
			}
		}
	}
}

// readStream reads req's batch once; for a reader that waits and has
// nothing new, it marks the record waited on and returns how long its
// lease has left by the database clock (0: b is the answer).
func (s *Store) readStream(ctx context.Context, req *idemstore.StreamRead) (idemstore.StreamBatch, time.Duration, error) {
	const op = "read stream"
	c, err := s.acquire(ctx, op)
	if err != nil {
		return idemstore.StreamBatch{}, 0, err
	}
	defer c.Release()
	max := int64(req.Max)
	if max <= 0 {
		max = defaultReadMax
	}
	for {
		b, r, waiters, now, err := s.readBatch(ctx, c, req, max)
		if err != nil || !req.Idle(b) {
			return b, 0, err
		}
		if waiters {
			// Wake just after the lease ends so the re-read sees it expired.
			return b, r.leaseUntil.Sub(now) + time.Millisecond, nil
		}
		// Mark the record (compare-and-set on the owner and fence just
		// read), then read again: an append committed before the mark
		// did not NOTIFY.
		if _, err := c.Exec(ctx, s.q.waitArm, req.Key, r.owner, r.fence); err != nil {
			return idemstore.StreamBatch{}, 0, s.wrap(ctx, op, req.Key, err)
		}
	}
}

// readBatch runs the read statement: the batch, the row it is of, whether
// the row is marked waited on, and the statement's time.
func (s *Store) readBatch(ctx context.Context, c *pgxpool.Conn, req *idemstore.StreamRead, max int64) (idemstore.StreamBatch, row, bool, time.Time, error) {
	var (
		r       row
		waiters bool
		now     time.Time
		n       int64
		items   [][]byte
	)
	from := int64(min(req.From, math.MaxInt64)) // past any item either way
	err := c.QueryRow(ctx, s.q.readStream, req.Key, s.ts(), from, max).Scan(
		&r.state, &r.owner, &r.fence, &r.fp, &r.result, &r.leaseUntil, &r.expiresAt, &r.format, &waiters, &now, &n, &items)
	if errors.Is(err, pgx.ErrNoRows) {
		return idemstore.StreamBatch{}, r, false, now, nil
	}
	if err != nil {
		return idemstore.StreamBatch{}, r, false, now, s.wrap(ctx, "read stream", req.Key, err)
	}
	if err := r.check(req.Key); err != nil {
		return idemstore.StreamBatch{}, r, false, now, err
	}
	if !now.Before(r.expiresAt) {
		return idemstore.StreamBatch{}, r, false, now, nil
	}
	b := idemstore.NewStreamBatch(idemstore.State(r.state), uint64(r.fence), r.leaseUntil, now, r.result)
	b.Count = uint64(n)
	if len(items) > 0 {
		b.Items = items
	}
	return b, r, waiters, now, nil
}
