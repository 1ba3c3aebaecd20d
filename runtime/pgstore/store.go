package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/replayhint"
)

// Store is an idemstore.Store over a PostgreSQL table. It is safe for
// concurrent use. Make one per table and process, and Close it when done.
type Store struct {
	pool *pgxpool.Pool
	cfg  config
	n    names
	q    queries

	maxStep   int   // MaxStepBytes, smaller in tests (steps.go)
	maxStream int64 // MaxStreamBytes, smaller in tests (stream.go)

	lis *listener

	// seen is the hint that a claim is likely a replay (replay.go);
	// readFirst overrides it in benchmarks, where Never is the old path:
	// no read and no claimNew either.
	seen      replayhint.Recent
	readFirst replayhint.Mode
	// rows names keys this process found or made a row for: their claim
	// goes straight to the claim statement, not to claimNew.
	rows replayhint.Recent
	// inTx names leases (inTxKey) this process completed with
	// CompleteInTx: their Complete runs the finish statement that
	// recognises that, every other finish the plain UPDATE.
	inTx replayhint.Recent
	// limit bounds pool waits (acquire.go).
	limit acquireLimit

	closeOnce sync.Once
	stop      context.CancelFunc
	bg        sync.WaitGroup
}

var _ idemstore.Store = (*Store)(nil)

// Record states as stored in the state column.
const (
	stInProgress = 1
	stCompleted  = 2
	stFailed     = 3
	stReleased   = 4
)

// maxClaimAttempts bounds the claim statement's retries. A retry happens
// only when the statement's snapshot and the row it conflicted with
// disagree (another claim committed in between), so it is rare and a new
// snapshot settles it.
const maxClaimAttempts = 8

// New returns a store over pool. It checks the schema once: a missing
// schema is ErrSchemaMissing (run Migrate), a newer one ErrSchemaTooNew.
// The pool stays the caller's: Close does not close it.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	cfg := buildConfig(opts)
	s := &Store{pool: pool, cfg: cfg, n: newNames(cfg.schema, cfg.table), maxStep: MaxStepBytes, maxStream: MaxStreamBytes}
	s.q = buildQueries(s.n)
	v, err := readVersion(ctx, pool, s.n)
	if err != nil {
		return nil, err
	}
	switch {
	case v > SchemaVersion:
		return nil, fmt.Errorf("%w: %s is at schema version %d, this pgstore knows up to %d: upgrade the binary",
			ErrSchemaTooNew, s.n.qTable, v, SchemaVersion)
	case v < SchemaVersion:
		return nil, fmt.Errorf("%w: %s is at schema version %d, this pgstore needs %d: run pgstore.Migrate",
			ErrSchemaMissing, s.n.qTable, v, SchemaVersion)
	}
	var partitioned bool
	if err := pool.QueryRow(ctx, `SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass($1)`, s.n.qTable).Scan(&partitioned); err != nil {
		return nil, fmt.Errorf("pgstore: inspecting %s: %w", s.n.qTable, unreachable(err))
	}
	if partitioned {
		s.q.cleanup = s.q.cleanupByKey
	}
	bgctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.lis = newListener(s, bgctx)
	if cfg.sweepEvery > 0 {
		s.bg.Add(1)
		go s.sweep(bgctx)
	}
	return s, nil
}

// Close stops the notification listener and the sweeper and waits for
// them. Waits in flight fall back to polling. The pool is not closed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.stop()
		s.lis.close()
		s.bg.Wait()
	})
	return nil
}

// Table returns the qualified, quoted records table name, for queries of
// your own (dashboards, partition maintenance).
func (s *Store) Table() string { return s.n.qTable }

// Pool returns the pool the store uses.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// ts is the time argument of every statement: NULL means the database
// clock (statement_timestamp()); WithClock sends the test clock instead.
func (s *Store) ts() any {
	if s.cfg.now == nil {
		return nil
	}
	return s.cfg.now()
}

func micros(d time.Duration) int64 { return d.Microseconds() }

// wrap turns a statement error into the store's error: ctx errors wrap
// ctx.Err(), missing tables ErrSchemaMissing.
func (s *Store) wrap(ctx context.Context, op, key string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("pgstore: %s %s: %w (%w)", op, key, cerr, err)
	}
	if isUndefined(err) {
		return fmt.Errorf("%w: %s: %w", ErrSchemaMissing, missingHint(s.n), err)
	}
	if keyRefused(err) {
		return fmt.Errorf("%w: pgstore: %s: Postgres cannot hold the %d-byte key %.40q...: %w", idem.ErrInvalidKey, op, len(key), key, err)
	}
	return fmt.Errorf("pgstore: %s %s: %w", op, key, unreachable(err))
}

// keyRefused reports whether Postgres refused err's statement for a value
// it can never hold: a key past the B-tree entry limit (about 2.7 kB
// after compression, so no byte count here can stand in for it), or
// bytes the database encoding rejects (NUL, invalid UTF-8). Keys are the
// only text the store's statements write, and such a key fails the same
// way on every call, so it is idem.ErrInvalidKey, which a fail-open Guard
// does not ride out as an outage.
func keyRefused(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case "54000", // program_limit_exceeded: index row size exceeds the maximum
		"22021", // character_not_in_repertoire
		"22P05": // untranslatable_character
		return true
	}
	return false
}

var _ idemstore.Orderer = (*Store)(nil)

// SupportsOrdering reports that the store implements idemstore.OrderClaim
// (schema version 2: the <table>_order table and <table>_claim_ordered
// function, which version 3 replaces to keep a live record's fingerprint
// and version 5 succeeds with <table>_claim_ordered_v5, which returns the
// call's steps).
func (s *Store) SupportsOrdering() bool { return true }

// Claim implements idemstore.Store.
func (s *Store) Claim(ctx context.Context, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	c, err := s.acquire(ctx, "claim")
	if err != nil {
		return idemstore.ClaimResult{}, err
	}
	defer c.Release()
	if req.Order.Key != "" {
		return s.claimOrdered(ctx, c, req)
	}
	if s.readFirst.ReadsFirst(&s.seen, req.Key) {
		if res, ok, err := s.replay(ctx, c, req); ok || err != nil {
			return res, err
		}
	} else if s.readFirst != replayhint.Never && !s.rows.Has(req.Key) {
		res, ok, err := s.claimNew(ctx, c, req)
		if ok || err != nil {
			return res, err
		}
	}
	res, err := s.claim(ctx, c, req)
	if err == nil {
		s.seen.Note(req.Key, res.Status)
		s.rows.Add(req.Key)
	}
	return res, err
}

// claimNew claims a key that has no row with one INSERT; ok is false when
// the key has a row, which the claim statement then decides on.
func (s *Store) claimNew(ctx context.Context, c *pgxpool.Conn, req idemstore.ClaimRequest) (res idemstore.ClaimResult, ok bool, err error) {
	var leaseUntil time.Time
	err = c.QueryRow(ctx, s.q.claimNew, req.Key, req.Owner[:], req.Fingerprint[:],
		micros(req.Lease), micros(req.TTL), s.ts()).Scan(&leaseUntil)
	if errors.Is(err, pgx.ErrNoRows) {
		return idemstore.ClaimResult{}, false, nil
	}
	if err != nil {
		return idemstore.ClaimResult{}, false, s.wrap(ctx, "claim", req.Key, err)
	}
	s.rows.Add(req.Key)
	return idemstore.ClaimResult{Status: idemstore.ClaimAcquired, Fence: 1, LeaseUntil: leaseUntil}, true, nil
}

// claim runs the claim statement until it settles.
func (s *Store) claim(ctx context.Context, c *pgxpool.Conn, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	for range maxClaimAttempts {
		var (
			claimed, tookOver bool
			fence             int64
			leaseUntil        time.Time
			state, format     int16
			owner, fp, result []byte
			expiresAt, now    *time.Time
			names, data       [][]byte
		)
		err := c.QueryRow(ctx, s.q.claim, req.Key, req.Owner[:], req.Fingerprint[:],
			micros(req.Lease), micros(req.TTL), s.ts()).
			Scan(&claimed, &fence, &leaseUntil, &tookOver, &state, &owner, &fp, &result, &expiresAt, &format, &now, &names, &data)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // conflicted with a row our snapshot did not see yet
		}
		if err != nil {
			return idemstore.ClaimResult{}, s.wrap(ctx, "claim", req.Key, err)
		}
		if claimed {
			return acquired(req.Key, fence, leaseUntil, tookOver, names, data)
		}
		r := row{state: state, owner: owner, fence: fence, fp: fp, result: result,
			leaseUntil: leaseUntil, expiresAt: deref(expiresAt), format: format}
		if err := r.check(req.Key); err != nil {
			return idemstore.ClaimResult{}, err
		}
		at := deref(now)
		if r.claimable(at, req.Fingerprint) {
			continue // our snapshot was stale: someone claimed it after it was taken
		}
		return r.busyResult(req.Fingerprint), nil
	}
	return idemstore.ClaimResult{}, fmt.Errorf("pgstore: claim %s: key kept changing under %d attempts", req.Key, maxClaimAttempts)
}

// acquired is the result of a claim that took key: acquired anew or
// taken over, with the steps the row keeps (names and data).
func acquired(key string, fence int64, leaseUntil time.Time, tookOver bool, names, data [][]byte) (idemstore.ClaimResult, error) {
	st := idemstore.ClaimAcquired
	if tookOver {
		st = idemstore.ClaimTakenOver
	}
	steps, err := stepsOf(key, names, data)
	if err != nil {
		return idemstore.ClaimResult{}, err
	}
	return idemstore.ClaimResult{Status: st, Fence: uint64(fence), LeaseUntil: leaseUntil, Steps: steps}, nil
}

// claimOrdered is Claim with per-entity ordering: one call of the
// <table>_claim_ordered_v5 function, which serializes would-execute claims
// on the entity's order row (see migrations/0002_order.sql and
// 0005_steps.sql).
func (s *Store) claimOrdered(ctx context.Context, c *pgxpool.Conn, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	var (
		claimed, tookOver, outOfOrder bool
		fence                         int64
		leaseUntil, expiresAt         *time.Time
		lastAccepted, now             *time.Time
		state, format                 int16
		owner, fp, result             []byte
		names, data                   [][]byte
	)
	err := c.QueryRow(ctx, s.q.claimOrdered, req.Key, req.Owner[:], req.Fingerprint[:],
		micros(req.Lease), micros(req.TTL), s.ts(),
		req.Order.Key, req.Order.At, micros(req.Order.Grace), req.Order.Override).
		Scan(&claimed, &fence, &leaseUntil, &tookOver, &state, &owner, &fp, &result, &expiresAt, &format, &now, &outOfOrder, &lastAccepted, &names, &data)
	if err != nil {
		return idemstore.ClaimResult{}, s.wrap(ctx, "claim", req.Key, err)
	}
	switch {
	case claimed:
		return acquired(req.Key, fence, deref(leaseUntil), tookOver, names, data)
	case outOfOrder:
		return idemstore.ClaimResult{Status: idemstore.ClaimOutOfOrder, Fence: uint64(fence), LastAccepted: deref(lastAccepted)}, nil
	}
	r := row{state: state, owner: owner, fence: fence, fp: fp, result: result,
		leaseUntil: deref(leaseUntil), expiresAt: deref(expiresAt), format: format}
	if err := r.check(req.Key); err != nil {
		return idemstore.ClaimResult{}, err
	}
	return r.busyResult(req.Fingerprint), nil
}

// Heartbeat implements idemstore.Store.
func (s *Store) Heartbeat(ctx context.Context, l idemstore.Lease) error {
	c, err := s.acquire(ctx, "heartbeat")
	if err != nil {
		return err
	}
	defer c.Release()
	tag, err := c.Exec(ctx, s.q.heartbeat, l.Key, l.Owner[:], int64(l.Fence), micros(l.Duration), s.ts())
	if err != nil {
		return s.wrap(ctx, "heartbeat", l.Key, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	// CompleteInTx may have finished the record in the function's own
	// transaction while this heartbeat was on its way: that is the owner
	// finishing, not losing the lease. (A fresh statement, so a fresh
	// snapshot that sees the committed transaction.)
	var done bool
	if err := c.QueryRow(ctx, s.q.doneInTx, l.Key, l.Owner[:], int64(l.Fence)).Scan(&done); err != nil {
		return s.wrap(ctx, "heartbeat", l.Key, err)
	}
	if done {
		return nil
	}
	return fmt.Errorf("%w: %s fence %d", idem.ErrLeaseLost, l.Key, l.Fence)
}

// Complete implements idemstore.Store.
func (s *Store) Complete(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	return s.finish(ctx, "complete", l, stCompleted, r.Data)
}

// Fail implements idemstore.Store.
func (s *Store) Fail(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	return s.finish(ctx, "fail", l, stFailed, r.Data)
}

// Release implements idemstore.Store.
func (s *Store) Release(ctx context.Context, l idemstore.Lease) error {
	return s.finish(ctx, "release", l, stReleased, nil)
}

// finish is Complete, Fail and Release: one fenced UPDATE that also
// notifies waiters (delivered at commit) and, in the same statement,
// recognises a record CompleteInTx already completed for this owner.
func (s *Store) finish(ctx context.Context, op string, l idemstore.Lease, state int16, data []byte) error {
	c, err := s.acquire(ctx, op)
	if err != nil {
		return err
	}
	defer c.Release()
	if data == nil && state != stReleased {
		data = []byte{} // NULL means "no result"; an empty result is still a result
	}
	var outcome int16 // 1 updated, 2 already completed in tx with the same data, 3 … with other data
	sql := s.q.finishPlain
	if k := inTxKey(l); s.inTx.Has(k) {
		s.inTx.Drop(k)
		sql = s.q.finish
	}
	err = c.QueryRow(ctx, sql, l.Key, l.Owner[:], int64(l.Fence), state, data, micros(l.TTL), s.ts(), s.n.channel).
		Scan(&outcome)
	if err == nil {
		s.hint(l.Key, state)
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if state == stCompleted {
			// The statement's snapshot may predate a CompleteInTx commit
			// it waited for: look again with a fresh one.
			var same *bool
			err := c.QueryRow(ctx, s.q.doneInTxData, l.Key, l.Owner[:], int64(l.Fence), data).Scan(&same)
			if err == nil && same != nil {
				if *same {
					return nil
				}
				return fmt.Errorf("%w: %s fence %d", ErrTxResultMismatch, l.Key, l.Fence)
			}
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return s.wrap(ctx, op, l.Key, err)
			}
		}
		return fmt.Errorf("%w: %s fence %d", idem.ErrLeaseLost, l.Key, l.Fence)
	case err != nil:
		return s.wrap(ctx, op, l.Key, err)
	case outcome == 3:
		return fmt.Errorf("%w: %s fence %d", ErrTxResultMismatch, l.Key, l.Fence)
	}
	return nil
}

// hint updates the replay hint with a finish: a completed or failed key's
// next claim is likely a replay, a released key's is not.
func (s *Store) hint(key string, state int16) {
	if state == stReleased {
		s.seen.Drop(key)
	} else {
		s.seen.Add(key)
	}
}

// Get implements idemstore.Store.
func (s *Store) Get(ctx context.Context, key string) (idemstore.Record, error) {
	var now time.Time
	var names, data [][]byte
	rec, err := s.queryRecord(ctx, "get", key, s.q.get, []any{key, s.ts()}, &now, &names, &data)
	if err != nil {
		return idemstore.Record{}, err
	}
	if !now.Before(rec.ExpiresAt) {
		return idemstore.Record{}, fmt.Errorf("%w: %s", idem.ErrNotFound, key)
	}
	if rec.Steps, err = stepsOf(key, names, data); err != nil {
		return idemstore.Record{}, err
	}
	return rec, nil
}

// Delete implements idemstore.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	s.seen.Drop(key) // the next claim of key is likely a new run
	s.rows.Drop(key)
	c, err := s.acquire(ctx, "delete")
	if err != nil {
		return err
	}
	defer c.Release()
	tag, err := c.Exec(ctx, s.q.del, key, s.n.channel)
	if err != nil {
		return s.wrap(ctx, "delete", key, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s", idem.ErrNotFound, key)
	}
	return nil
}

// row is a records row as read back, checked before use.
type row struct {
	state, format     int16
	owner, fp, result []byte
	fence             int64
	leaseUntil        time.Time
	expiresAt         time.Time
}

// check rejects rows this binary cannot interpret: they are never treated
// as absent.
func (r *row) check(key string) error {
	if r.format > rowFormat {
		return fmt.Errorf("%w: %w: %s has row format %d, this pgstore reads up to %d: upgrade the binary",
			ErrSchemaTooNew, idem.ErrCorruptRecord, key, r.format, rowFormat)
	}
	var bad string
	switch {
	case r.format < 1:
		bad = fmt.Sprintf("row format %d", r.format)
	case r.state < stInProgress || r.state > stReleased:
		bad = fmt.Sprintf("state %d", r.state)
	case len(r.owner) != len(idemstore.Token{}):
		bad = fmt.Sprintf("owner of %d bytes", len(r.owner))
	case len(r.fp) != len(idemstore.Fingerprint{}):
		bad = fmt.Sprintf("fingerprint of %d bytes", len(r.fp))
	case r.fence < 1:
		bad = fmt.Sprintf("fence %d", r.fence)
	case (r.state == stCompleted || r.state == stFailed) && r.result == nil:
		bad = "finished without a result"
	case r.expiresAt.IsZero():
		bad = "no expiry"
	}
	if bad != "" {
		return fmt.Errorf("%w: %s: %s", idem.ErrCorruptRecord, key, bad)
	}
	return nil
}

// busyResult is the claim's answer for a checked row that is in the way:
// another payload's live row in any state, or running, completed or failed.
func (r *row) busyResult(fp idemstore.Fingerprint) idemstore.ClaimResult {
	fence := uint64(r.fence)
	if [32]byte(r.fp) != fp {
		return idemstore.ClaimResult{Status: idemstore.ClaimMismatch, Fence: fence}
	}
	switch r.state {
	case stInProgress:
		return idemstore.ClaimResult{Status: idemstore.ClaimInProgress, Fence: fence, LeaseUntil: r.leaseUntil}
	case stCompleted:
		return idemstore.ClaimResult{Status: idemstore.ClaimCompleted, Fence: fence, Result: idemstore.Result{Data: nilIfEmpty(r.result)}}
	default: // stFailed; check() rejected anything else
		return idemstore.ClaimResult{Status: idemstore.ClaimFailed, Fence: fence, Result: idemstore.Result{Data: nilIfEmpty(r.result)}}
	}
}

// claimable mirrors the SQL condition of the claim statement.
func (r *row) claimable(now time.Time, fp idemstore.Fingerprint) bool {
	return !now.Before(r.expiresAt) || ([32]byte(r.fp) == fp &&
		(r.state == stReleased || (r.state == stInProgress && !now.Before(r.leaseUntil))))
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}
