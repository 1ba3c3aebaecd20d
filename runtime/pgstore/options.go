package pgstore

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"
)

// Errors specific to the Postgres store. Test them with errors.Is.
var (
	// ErrSchemaMissing: the records table or its version table does not
	// exist. Run Migrate, or apply MigrationSQL with your migration tool.
	ErrSchemaMissing = errors.New("pgstore: schema missing")
	// ErrSchemaTooNew: the database (or a row in it) was written by a newer
	// version of pgstore than this binary understands. Row-level errors
	// also wrap idem.ErrCorruptRecord: the row is never treated as absent.
	ErrSchemaTooNew = errors.New("pgstore: schema is newer than this binary")
	// ErrPoolExhausted: no pool connection became free within the acquire
	// timeout (WithAcquireTimeout) while the caller's ctx was still live.
	ErrPoolExhausted = errors.New("pgstore: connection pool exhausted")
	// ErrNoLease: CompleteInTx or InTx was called with a ctx that does not
	// belong to a guarded call (idem.LeaseFrom found nothing).
	ErrNoLease = errors.New("pgstore: ctx carries no idem lease: call from inside the guarded function")
	// ErrTxResultMismatch: the Guard completed a record that CompleteInTx
	// had already completed in the caller's transaction, with different
	// bytes. The bytes committed with the transaction stand; the function
	// returned a value other than the one it completed with.
	ErrTxResultMismatch = errors.New("pgstore: result differs from the one completed in the transaction")
)

// Option configures a Store (and Migrate / MigrationSQL, which read the
// schema and table options).
type Option func(*config)

type config struct {
	schema, table  string
	poll           time.Duration
	acquireTimeout time.Duration
	sweepEvery     time.Duration
	sweepBatch     int
	now            func() time.Time
	onError        func(error)
	txRetries      int
}

func buildConfig(opts []Option) config {
	c := config{
		schema:         "public",
		table:          "idem_records",
		poll:           500 * time.Millisecond,
		acquireTimeout: 10 * time.Second,
		sweepBatch:     5000,
		txRetries:      5,
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithSchema sets the schema holding the records table (default "public").
func WithSchema(name string) Option { return func(c *config) { c.schema = name } }

// WithTable sets the records table's name (default "idem_records"). The
// version table is <name>_schema, the retention index <name>_sweep_at_idx.
func WithTable(name string) Option { return func(c *config) { c.table = name } }

// WithPollInterval bounds how long a Wait goes without re-reading the record
// when no notification arrives (default 500ms). Notifications normally wake
// waiters long before; polling only covers a lost notification or a
// listener that is reconnecting (then Wait polls at most every 50ms).
func WithPollInterval(d time.Duration) Option { return func(c *config) { c.poll = d } }

// WithAcquireTimeout bounds how long an operation waits for a free pool
// connection (default 10s) before failing with ErrPoolExhausted. Zero
// waits as long as the ctx allows. The bound is kept by a timer shared by
// the acquires that start close together, so a wait ends between 7/8 of d
// and d.
func WithAcquireTimeout(d time.Duration) Option { return func(c *config) { c.acquireTimeout = d } }

// WithSweeper starts a background goroutine that runs Cleanup every
// interval until Close. Running it in every process is safe: batches skip
// rows another sweeper has locked.
func WithSweeper(every time.Duration) Option { return func(c *config) { c.sweepEvery = every } }

// WithCleanupBatch sets how many rows one cleanup statement deletes at most
// (default 5000), which bounds its lock footprint and WAL burst.
func WithCleanupBatch(n int) Option { return func(c *config) { c.sweepBatch = n } }

// WithErrorHandler receives errors of background work: the notification
// listener's connection and the sweeper.
func WithErrorHandler(f func(error)) Option { return func(c *config) { c.onError = f } }

// WithTxRetries sets how many times InTx runs the function again after a
// serialization failure or deadlock (default 5).
func WithTxRetries(n int) Option { return func(c *config) { c.txRetries = n } }

// WithClock makes the store judge time by now instead of the database
// clock. For tests only (the conformance suite's manual clock): in
// production leases must be judged by one clock, the database's.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// channelName is the NOTIFY channel of a records table: readable when it
// fits the 63-byte identifier limit, hashed otherwise.
func channelName(schema, table string) string {
	ch := "idem:" + schema + "." + table
	if len(ch) <= 63 {
		return ch
	}
	sum := sha256.Sum256([]byte(schema + "." + table))
	return "idem:" + hex.EncodeToString(sum[:16])
}
