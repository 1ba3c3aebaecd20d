package pgstore

import (
	"strconv"
	"strings"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// queries are the store's statements for one table. Every statement is
// one round trip; pgx prepares and caches each per connection.
//
// Time: a $ts parameter that is NULL (always, outside tests) means
// statement_timestamp(), the database clock at the start of the statement.
// It is STABLE, so one statement sees one instant and indexes can use it,
// and unlike now() it is not frozen at the start of a caller's transaction.
type queries struct {
	claim, claimNew, heartbeat, finish, finishPlain     string
	doneInTx, replay                                    string
	doneInTxData                                        string
	get, del, waitCheck, waitArm, completeInTx, cleanup string
	// cleanupByKey replaces cleanup on a partitioned table, where a ctid
	// names a row only within one partition.
	cleanupByKey               string
	backfillSweep              string
	list, forceRelease         string
	claimOrdered, cleanupOrder string
	saveStep                   string
	appendItem, readStream     string
}

// claimable(x, ts, fp): the row may be claimed with fingerprint fp — no
// longer live (any fingerprint), or released or in progress with an
// expired lease and holding fp — and is one this binary understands (a
// row it cannot read is never overwritten as if absent). A live row keeps
// its first claim's fingerprint in every state, so another payload cannot
// take over a crashed owner's lease or run after a release.
const claimableSQL = `(x.format <= 1 AND x.state BETWEEN 1 AND 4 AND
	(x.expires_at <= TS OR (x.fingerprint = FP AND (x.state = 4 OR (x.state = 1 AND x.lease_until <= TS)))))`

func claimable(alias, ts, fp string) string {
	return strings.NewReplacer("x.", alias+".", "TS", ts, "FP", fp).Replace(claimableSQL)
}

// stepsSize is the bytes of a row's steps (names and data); stepFits, in
// saveStep, says the step $4 with data $5 is new and fits in $6 bytes.
const (
	stepsSize = `(coalesce((SELECT sum(octet_length(x)) FROM unnest(step_names) x), 0) +
	coalesce((SELECT sum(octet_length(x)) FROM unnest(step_data) x), 0))::bigint`
	stepFits = `(NOT coalesce($4::bytea = ANY(step_names), false) AND
	` + stepsSize + ` + octet_length($4::bytea) + octet_length($5::bytea) <= $6::bigint)`
)

func buildQueries(n names) queries {
	var q queries
	sub := strings.NewReplacer("{T}", n.qTable, "{I}", n.qItems).Replace
	claimQueries(&q, sub)
	ownerQueries(&q, sub)
	readQueries(&q, sub)
	adminQueries(&q, n, sub)
	streamQueries(&q, sub)
	return q
}

// tsClaim is the claim's time: see queries.
const tsClaim = `coalesce($6::timestamptz, statement_timestamp())`

// claimQueries sets the claim.
func claimQueries(q *queries, sub func(string) string) {
	// Claim. cur reads the row; ins inserts or takes the row over only
	// when cur shows nothing in the way, so a replay (the row is
	// finished and live) writes nothing: no transaction id, no WAL,
	// one read. ON CONFLICT re-checks claimability against the newest
	// row version under its row lock, which is what makes the claim
	// atomic; when that disagrees with cur's snapshot the statement
	// returns no row or a stale claimable row and the client runs it
	// again with a fresh snapshot.
	q.claim = sub(`WITH cur AS (
	SELECT state, owner, fence, fingerprint, result, lease_until, expires_at, format
	FROM {T} WHERE key = $1
), ins AS (
	INSERT INTO {T} AS r (key, state, owner, fence, fingerprint, result, lease_until, expires_at, updated_at, claimed_at, took_over, completed_in_tx, format, sweep_at)
	SELECT $1, 1, $2, 1, $3, NULL, t.ts + $4::bigint * interval '1 microsecond',
		t.ts + ($4::bigint + $5::bigint) * interval '1 microsecond', t.ts, t.ts, false, false, 1,
		t.ts + $5::bigint * interval '1 microsecond'
	FROM (SELECT ` + tsClaim + ` AS ts) t
	WHERE NOT EXISTS (SELECT 1 FROM cur c WHERE NOT ` + claimable("c", "t.ts", "$3::bytea") + `)
	ON CONFLICT (key) DO UPDATE SET
		state = 1, owner = excluded.owner, fence = r.fence + 1, fingerprint = excluded.fingerprint,
		result = NULL, lease_until = excluded.lease_until, expires_at = excluded.expires_at,
		updated_at = excluded.updated_at, claimed_at = excluded.claimed_at, completed_in_tx = false, format = 1,
		sweep_at = excluded.sweep_at,
		-- a retained row's call resumes with its steps; a row made anew
		-- (past its retention) is another call, which starts without any
		step_names = CASE WHEN r.expires_at > excluded.updated_at THEN r.step_names END,
		step_data = CASE WHEN r.expires_at > excluded.updated_at THEN r.step_data END,
		took_over = (r.state = 1 AND r.expires_at > excluded.updated_at),
		-- waiters of a taken-over owner still wait for the key
		waiters = (r.waiters AND r.state = 1 AND r.expires_at > excluded.updated_at)
	WHERE ` + claimable("r", "excluded.updated_at", "excluded.fingerprint") + `
	RETURNING fence, lease_until, took_over, step_names, step_data
)
SELECT true, i.fence, i.lease_until, i.took_over, 0::smallint, NULL::bytea, NULL::bytea, NULL::bytea,
	NULL::timestamptz, 1::smallint, NULL::timestamptz, i.step_names, i.step_data
FROM ins i
UNION ALL
SELECT false, c.fence, c.lease_until, false, c.state, c.owner, c.fingerprint, c.result,
	c.expires_at, c.format, ` + tsClaim + `, NULL::bytea[], NULL::bytea[]
FROM cur c WHERE NOT EXISTS (SELECT 1 FROM ins)`)

	// claimNew is the claim of a key that has no row (a first execution),
	// as one plain INSERT: a third of the claim statement's server work
	// (docs/BENCHMARKS.md). ON CONFLICT DO NOTHING neither writes nor
	// locks a row that is there, so on a key with a row it returns
	// nothing and the claim statement decides as above.
	q.claimNew = sub(strings.ReplaceAll(`INSERT INTO {T} (key, state, owner, fence, fingerprint, result, lease_until, expires_at, updated_at, claimed_at, took_over, completed_in_tx, format, sweep_at)
VALUES ($1, 1, $2, 1, $3, NULL, TS + $4::bigint * interval '1 microsecond',
	TS + ($4::bigint + $5::bigint) * interval '1 microsecond', TS, TS, false, false, 1,
	TS + $5::bigint * interval '1 microsecond')
ON CONFLICT (key) DO NOTHING
RETURNING lease_until`, "TS", tsClaim))
}

// finishUpdate is the fenced write of finish and finishPlain: state $4
// and result $5 on the row key $1 holds in progress under owner $2 and
// fence $3, kept $6 µs from the time $7. A release (state 4) keeps the
// call's steps, a completion or failure drops them.
const finishUpdate = `UPDATE {T} SET state = $4, result = $5,
	step_names = CASE WHEN $4::smallint = 4 THEN step_names END,
	step_data = CASE WHEN $4::smallint = 4 THEN step_data END,
	expires_at = coalesce($7::timestamptz, statement_timestamp()) + $6::bigint * interval '1 microsecond',
	sweep_at = least(sweep_at, coalesce($7::timestamptz, statement_timestamp()) + $6::bigint * interval '1 microsecond'),
	updated_at = coalesce($7::timestamptz, statement_timestamp())
WHERE key = $1 AND owner = $2 AND fence = $3 AND state = 1`

// ownerQueries sets the owner's writes: heartbeat, finish, transactional completion, steps.
func ownerQueries(q *queries, sub func(string) string) {
	// Heartbeat keeps the record's retention after its lease
	// (expires_at - lease_until) as the claim set it.
	q.heartbeat = sub(`UPDATE {T} SET
	lease_until = coalesce($5::timestamptz, statement_timestamp()) + $4::bigint * interval '1 microsecond',
	expires_at = coalesce($5::timestamptz, statement_timestamp()) + $4::bigint * interval '1 microsecond' + (expires_at - lease_until),
	updated_at = coalesce($5::timestamptz, statement_timestamp())
WHERE key = $1 AND owner = $2 AND fence = $3 AND state = 1`)

	// Complete, Fail, Release. Returns 1 when it updated the row, 2 or
	// 3 when CompleteInTx had completed it for this same owner and
	// fence with the same (2) or other (3) bytes, no row when the
	// lease is lost. A release keeps the call's steps, a completion
	// or failure replaces them with its result.
	q.finish = sub(`WITH u AS (
	` + finishUpdate + `
	RETURNING key, waiters
)
SELECT 1::smallint FROM u WHERE CASE WHEN u.waiters THEN pg_notify($8, md5(u.key)) IS NOT NULL ELSE true END
UNION ALL
SELECT CASE WHEN r.result = $5 THEN 2 ELSE 3 END::smallint FROM {T} r
WHERE r.key = $1 AND r.owner = $2 AND r.fence = $3 AND r.state = 2 AND r.completed_in_tx
	AND $4::smallint = 2 AND NOT EXISTS (SELECT 1 FROM u)`)

	// finishPlain is finish without the CompleteInTx branch, as one
	// UPDATE (the common case, a fifth less server work): the same
	// parameters and answer 1, or no row, on which the store looks for a
	// CompleteInTx completion with doneInTxData as for finish's no row.
	q.finishPlain = sub(finishUpdate + `
RETURNING (CASE WHEN waiters THEN pg_notify($8, md5(key)) IS NOT NULL ELSE true END)::int::smallint`)

	q.doneInTx = sub(`SELECT EXISTS (SELECT 1 FROM {T}
	WHERE key = $1 AND owner = $2 AND fence = $3 AND state = 2 AND completed_in_tx)`)

	q.doneInTxData = sub(`SELECT result = $4 FROM {T}
	WHERE key = $1 AND owner = $2 AND fence = $3 AND state = 2 AND completed_in_tx`)

	// Transactional completion: the same fenced CAS as Complete, run
	// in the caller's transaction. The NOTIFY is delivered only if
	// that transaction commits.
	q.completeInTx = sub(`WITH u AS (
	UPDATE {T} SET state = 2, result = $4, completed_in_tx = true, step_names = NULL, step_data = NULL,
		expires_at = coalesce($6::timestamptz, statement_timestamp()) + $5::bigint * interval '1 microsecond',
		sweep_at = least(sweep_at, coalesce($6::timestamptz, statement_timestamp()) + $5::bigint * interval '1 microsecond'),
		updated_at = coalesce($6::timestamptz, statement_timestamp())
	WHERE key = $1 AND owner = $2 AND fence = $3 AND state = 1
	RETURNING key, waiters
)
SELECT 1 FROM u WHERE CASE WHEN u.waiters THEN pg_notify($7, md5(u.key)) IS NOT NULL ELSE true END`)

	// SaveStep: one fenced UPDATE that appends the step unless the
	// call recorded one of that name already (which keeps its first
	// data) or the call's steps would pass $6 bytes. Returns the
	// size of the steps with this one, and whether the row holds a
	// step of that name now (false: too large); no row when the
	// lease is lost. The row is written either way (rarely anything
	// but an append), so that the outcome is read from the row
	// version the UPDATE locked, not from the statement's snapshot.
	q.saveStep = sub(`UPDATE {T} SET
	step_names = CASE WHEN ` + stepFits + ` THEN coalesce(step_names, '{}') || $4::bytea ELSE step_names END,
	step_data = CASE WHEN ` + stepFits + ` THEN coalesce(step_data, '{}') || $5::bytea ELSE step_data END
WHERE key = $1 AND owner = $2 AND fence = $3 AND state = 1
RETURNING coalesce($4::bytea = ANY(step_names), false), ` + stepsSize + ` + CASE WHEN $4::bytea = ANY(step_names) THEN 0 ELSE octet_length($4::bytea) + octet_length($5::bytea) END`)
}

// readQueries sets reads, Delete and Wait.
func readQueries(q *queries, sub func(string) string) {
	q.get = sub(`SELECT state, owner, fence, fingerprint, result, lease_until, expires_at, updated_at, claimed_at, format,
	coalesce($2::timestamptz, statement_timestamp()), step_names, step_data
FROM {T} WHERE key = $1`)

	// replay returns the three columns a replay answers with (replay.go),
	// and only from a row that is live, finished, holds the claim's
	// fingerprint and passes every test of row.check: the server filters,
	// so the client neither receives nor decodes the owner, fingerprint,
	// expiry and format (docs/BENCHMARKS.md has the gain). Any other row
	// returns nothing and goes to the claim statement, whose check refuses
	// it as before.
	q.replay = sub(`SELECT state, fence, result FROM {T}
WHERE key = $1 AND fingerprint = $2 AND expires_at > coalesce($3::timestamptz, statement_timestamp())
	AND state IN (` + strconv.Itoa(stCompleted) + `, ` + strconv.Itoa(stFailed) + `)
	AND format BETWEEN 1 AND ` + strconv.Itoa(rowFormat) + ` AND octet_length(owner) = ` + strconv.Itoa(len(idemstore.Token{})) + `
	AND fence >= 1 AND result IS NOT NULL`)

	// A record's stream items go with it, in the same statement.
	q.del = sub(`WITH d AS (DELETE FROM {T} WHERE key = $1 RETURNING key, waiters),
di AS (DELETE FROM {I} WHERE key = $1)
SELECT 1 FROM d WHERE CASE WHEN d.waiters THEN pg_notify($2, md5(d.key)) IS NOT NULL ELSE true END`)

	q.waitCheck = sub(`SELECT state, owner, fence, waiters, lease_until, expires_at, coalesce($2::timestamptz, statement_timestamp())
FROM {T} WHERE key = $1`)

	// A waiter marks the in-progress record it read (same owner and
	// fence), so whoever finishes it NOTIFYs.
	q.waitArm = sub(`UPDATE {T} SET waiters = true WHERE key = $1 AND owner = $2 AND fence = $3 AND state = 1`)
}

// adminQueries sets retention, admin and ordering.
func adminQueries(q *queries, n names, sub func(string) string) {
	// Retention: one batch. SKIP LOCKED lets many cleaners (and live
	// traffic) run at once: a row another cleaner or a claim has
	// locked is left to it. The outer condition re-checks expiry on
	// the row version actually deleted. ctid = ANY(ARRAY(...)) plans
	// as a TID scan. Rows are found by the sweep_at index (a lower
	// bound of expires_at, migrations/0006_sweep_at.sql) so that a
	// finish, which sets expires_at, is a HOT update.
	// by is the column a batch is chosen and deleted by: ctid (a TID
	// scan), or key on a partitioned table (see cleanupByKey). The
	// deleted records' stream items go in the same statement.
	cleanup := func(by string) string {
		return sub(`WITH d AS (
	DELETE FROM {T} WHERE ` + by + ` = ANY(ARRAY(
		SELECT ` + by + ` FROM {T}
		WHERE sweep_at <= coalesce($2::timestamptz, statement_timestamp())
			AND expires_at <= coalesce($2::timestamptz, statement_timestamp()) AND format <= 1
		LIMIT $1 FOR UPDATE SKIP LOCKED))
	AND expires_at <= coalesce($2::timestamptz, statement_timestamp())
	RETURNING key
), di AS (DELETE FROM {I} WHERE key = ANY(ARRAY(SELECT key FROM d)))
SELECT count(*) FROM d`)
	}
	q.cleanup = cleanup("ctid")
	q.cleanupByKey = cleanup("key")

	// backfillSweep gives up to $1 rows from before schema version 6
	// (sweep_at '-infinity', which cleanup has to look at on every
	// batch until they expire) their sweep_at: their expires_at, read
	// under the row lock. Rows of version 6 are never at '-infinity',
	// so once none is left this is one index probe.
	q.backfillSweep = sub(`WITH u AS (
	UPDATE {T} SET sweep_at = expires_at WHERE key = ANY(ARRAY(
		SELECT key FROM {T} WHERE sweep_at = '-infinity' LIMIT $1 FOR UPDATE SKIP LOCKED))
	AND sweep_at = '-infinity'
	RETURNING 1
)
SELECT count(*) FROM u`)

	// Admin. List pages by key within the prefix's key range.
	q.list = sub(`SELECT key, state, owner, fence, fingerprint, result, lease_until, expires_at, updated_at, claimed_at, format
FROM {T}
WHERE key >= $1 AND ($2::text IS NULL OR key < $2::text) AND ($4::boolean OR key > $3) AND starts_with(key, $1)
ORDER BY key LIMIT $5`)

	// ForceRelease keeps the record's remaining retention, as the
	// memory store does, and only touches rows this binary can read.
	q.forceRelease = sub(`WITH u AS (
	UPDATE {T} SET state = 4, owner = '\x00000000000000000000000000000000'::bytea, fence = fence + 1,
		result = NULL, completed_in_tx = false,
		expires_at = coalesce($2::timestamptz, statement_timestamp()) + greatest(expires_at - updated_at, interval '0'),
		updated_at = coalesce($2::timestamptz, statement_timestamp())
	WHERE key = $1 AND format <= 1 AND state BETWEEN 1 AND 4
		AND expires_at > coalesce($2::timestamptz, statement_timestamp()) -- past retention: gone
	RETURNING key, state, owner, fence, fingerprint, result, lease_until, expires_at, updated_at, claimed_at, format, waiters
)
SELECT state, owner, fence, fingerprint, result, lease_until, expires_at, updated_at, claimed_at, format FROM u
WHERE CASE WHEN u.waiters THEN pg_notify($3, md5(u.key)) IS NOT NULL ELSE true END`)

	q.claimOrdered = `SELECT claimed, fence, lease_until, took_over, state, owner, fingerprint, result,
	expires_at, format, now, out_of_order, last_accepted, step_names, step_data
FROM ` + n.qClaimV5 + `($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`

	q.cleanupOrder = `WITH d AS (
	DELETE FROM ` + n.qOrder + ` WHERE ctid = ANY(ARRAY(
		SELECT ctid FROM ` + n.qOrder + `
		WHERE expires_at <= coalesce($2::timestamptz, statement_timestamp())
		LIMIT $1 FOR UPDATE SKIP LOCKED))
	AND expires_at <= coalesce($2::timestamptz, statement_timestamp())
	RETURNING 1
)
SELECT count(*) FROM d`
}
