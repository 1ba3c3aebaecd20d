// Package pgstore is an idemstore.Store over PostgreSQL (pgx v5, pgxpool), for
// teams whose source of truth is Postgres. It is the store that can make a
// database side effect exactly-once: the guarded function can complete its
// record in its own transaction (CompleteInTx, InTx).
//
// Setup:
//
//	pool, _ := pgxpool.New(ctx, "postgres://…")
//	if err := pgstore.Migrate(ctx, pool); err != nil { … } // or apply pgstore.MigrationSQL() yourself
//	store, err := pgstore.New(ctx, pool)                     // checks the schema version
//	defer store.Close()
//	g := idem.NewGuard(store)
//
// How it maps the Store contract onto SQL (one table, one row per key):
//
//   - Claim of a key the process has no row for is one plain INSERT …
//     ON CONFLICT (key) DO NOTHING, which neither writes nor locks a row
//     that is there. Otherwise (and after such an INSERT found a row) the
//     claim statement decides, in one round trip: a CTE reads the row
//     and, only when nothing is in the way, runs INSERT … ON CONFLICT
//     (key) DO UPDATE … WHERE <released, expired, or lease expired>
//     RETURNING. A replay of a key the process finished or saw finished
//     is one SELECT; any replay writes nothing. A first execution is the
//     claim plus Complete, two round trips. Time is the database's
//     statement_timestamp(), so client clock skew cannot break
//     exclusivity.
//   - Heartbeat, Complete, Fail and Release are single UPDATEs,
//     compare-and-set on (key, owner, fence, state = in_progress); a stale
//     owner gets idem.ErrLeaseLost. Rows keep their fence through release
//     and expiry until retention deletes them, so fences never repeat.
//   - Recovery points (idemstore.Stepper): a call's steps are two array
//     columns of its row (step_names, step_data; schema version 5).
//     SaveStep is one fenced UPDATE that appends a step; the claim
//     statement returns a resumed row's steps in its one round trip and
//     clears them when it makes the row anew; completion clears them.
//     StepInTx records a step in the transaction that does its work.
//   - Streamed results (idemstore.Streamer, idem.Stream): a row per item
//     in <table>_items (schema version 7), read only under the record's
//     fence and owner, so a claim that starts a new run hides the old
//     run's items without touching that table. AppendItem is one fenced
//     statement; ReadStream reads the record and its items in one
//     snapshot, and a waiting one sleeps on the store's listener.
//   - Wait uses LISTEN/NOTIFY: one listening connection per Store (opened
//     on the first Wait), fanned out to waiters in process, with polling
//     at the lease end and at least every WithPollInterval as a fallback.
//   - Retention: Cleanup / CleanupBatch delete rows that are no longer
//     live, with their stream items, in batches (DELETE … WHERE ctid = ANY(ARRAY(SELECT … LIMIT n FOR
//     UPDATE SKIP LOCKED))), safe to run from many processes at once;
//     WithSweeper runs it in the background.
//   - Errors: a missing table is ErrSchemaMissing (run Migrate), a newer
//     schema ErrSchemaTooNew, a row this binary cannot interpret
//     idem.ErrCorruptRecord (never treated as absent), pool exhaustion
//     ErrPoolExhausted; a canceled ctx wraps ctx.Err().
//
// Transactional completion: inside the guarded function,
//
//	return pgstore.InTx(ctx, store, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) (Receipt, error) {
//		_, err := tx.Exec(ctx, `INSERT INTO orders …`)
//		return Receipt{…}, err
//	})
//
// commits the business write and the record's completion together (and
// retries serialization failures). A crash before COMMIT leaves neither;
// the key is then retried after its lease expires. The Guard's own
// Complete, which follows, finds the record already completed by the same
// owner and fence with the same bytes and returns nil.
//
// docs/POSTGRES.md has the schema, operational guidance and partitioning
// advice for very large tables.
package pgstore
