package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
)

// SchemaVersion is the newest schema version this package knows and the
// version New requires.
const SchemaVersion = 7

// rowFormat is the newest row format (records.format) this package reads.
const rowFormat = 1

//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() []migration {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		panic("pgstore: embedded migrations: " + err.Error())
	}
	var out []migration
	for _, e := range entries {
		name := e.Name()
		n, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil {
			panic("pgstore: migration file without a version prefix: " + name)
		}
		b, err := migrationFS.ReadFile("migrations/" + name)
		if err != nil {
			panic("pgstore: embedded migrations: " + err.Error())
		}
		out = append(out, migration{version: n, name: name, sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out
}

// names holds the quoted SQL names derived from the schema and table options.
type names struct {
	schema, table string // raw
	qSchema       string // "schema"
	qTable        string // "schema"."table"
	qVersion      string // "schema"."table_schema"
	qExpiresIndex string // "table_expires_at_idx" (versions 1 to 5)
	qExpiresIdxQ  string // "schema"."table_expires_at_idx", to drop it
	qSweepIndex   string // "table_sweep_at_idx" (version 6: retention)
	qOrder        string // "schema"."table_order"
	qOrderIndex   string // "table_order_expires_at_idx"
	qClaimOrdered string // "schema"."table_claim_ordered" (versions 2 to 4)
	qClaimV5      string // "schema"."table_claim_ordered_v5" (version 5: with steps)
	qItems        string // "schema"."table_items" (version 7: stream items)
	channel       string // NOTIFY channel (raw, ≤ 63 bytes)
}

func newNames(schema, table string) names {
	n := names{schema: schema, table: table}
	n.qSchema = pgx.Identifier{schema}.Sanitize()
	n.qTable = pgx.Identifier{schema, table}.Sanitize()
	n.qVersion = pgx.Identifier{schema, table + "_schema"}.Sanitize()
	n.qExpiresIndex = pgx.Identifier{table + "_expires_at_idx"}.Sanitize()
	n.qExpiresIdxQ = pgx.Identifier{schema, table + "_expires_at_idx"}.Sanitize()
	n.qSweepIndex = pgx.Identifier{table + "_sweep_at_idx"}.Sanitize()
	n.qOrder = pgx.Identifier{schema, table + "_order"}.Sanitize()
	n.qOrderIndex = pgx.Identifier{table + "_order_expires_at_idx"}.Sanitize()
	n.qClaimOrdered = pgx.Identifier{schema, table + "_claim_ordered"}.Sanitize()
	n.qClaimV5 = pgx.Identifier{schema, table + "_claim_ordered_v5"}.Sanitize()
	n.qItems = pgx.Identifier{schema, table + "_items"}.Sanitize()
	n.channel = channelName(schema, table)
	return n
}

func (n names) render(sql string) string {
	return strings.NewReplacer(
		"{{schema}}", n.qSchema,
		"{{table}}", n.qTable,
		"{{version_table}}", n.qVersion,
		"{{expires_index}}", n.qExpiresIndex,
		"{{expires_index_qualified}}", n.qExpiresIdxQ,
		"{{sweep_index}}", n.qSweepIndex,
		"{{order_table}}", n.qOrder,
		"{{order_expires_index}}", n.qOrderIndex,
		"{{claim_ordered}}", n.qClaimOrdered,
		"{{claim_ordered_v5}}", n.qClaimV5,
		"{{items_table}}", n.qItems,
	).Replace(sql)
}

// MigrationSQL returns the complete schema (every migration, in order) for
// the schema and table the options name, for teams that apply migrations
// with their own tool. Each migration is idempotent and records its version
// in the version table (<table>_schema), which New checks. The schema itself
// must exist (Migrate creates it when missing).
func MigrationSQL(opts ...Option) string {
	c := buildConfig(opts)
	n := newNames(c.schema, c.table)
	var b strings.Builder
	for _, m := range migrations() {
		fmt.Fprintf(&b, "-- %s\n", m.name)
		b.WriteString(n.render(m.sql))
		b.WriteString("\n")
	}
	return b.String()
}

// Migrate creates or upgrades the store's schema (schema, records table,
// retention index, version table) to SchemaVersion. It is safe to run from
// many processes at once: a transaction-scoped advisory lock serializes
// them, and a database already at SchemaVersion is left untouched. A
// database at a newer version than this package knows is refused with
// ErrSchemaTooNew.
func Migrate(ctx context.Context, pool *pgxpool.Pool, opts ...Option) error {
	c := buildConfig(opts)
	n := newNames(c.schema, c.table)
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: migrate %s: %w", n.qTable, unreachable(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it is a no-op
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7275, hashtext($1))`, n.qTable); err != nil {
		return fmt.Errorf("pgstore: migrate %s: lock: %w", n.qTable, unreachable(err))
	}
	var schemaExists bool
	if err := tx.QueryRow(ctx, `SELECT to_regnamespace($1) IS NOT NULL`, n.qSchema).Scan(&schemaExists); err != nil {
		return fmt.Errorf("pgstore: migrate %s: %w", n.qTable, err)
	}
	if !schemaExists {
		// Only when missing: CREATE SCHEMA IF NOT EXISTS still needs the
		// CREATE privilege on the database, which a team may not grant.
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+n.qSchema); err != nil {
			return fmt.Errorf("pgstore: migrate: creating schema %s: %w", n.qSchema, err)
		}
	}
	current, err := readVersion(ctx, tx, n)
	if err != nil && !errors.Is(err, ErrSchemaMissing) {
		return err
	}
	if current > SchemaVersion {
		return fmt.Errorf("%w: %s is at schema version %d, this pgstore knows up to %d: upgrade the binary",
			ErrSchemaTooNew, n.qTable, current, SchemaVersion)
	}
	for _, m := range migrations() {
		if m.version <= current {
			continue
		}
		if _, err := tx.Exec(ctx, n.render(m.sql)); err != nil {
			return fmt.Errorf("pgstore: migrate %s: applying %s: %w", n.qTable, m.name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgstore: migrate %s: commit: %w", n.qTable, err)
	}
	return nil
}

type queryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// readVersion returns the schema version recorded for the table, or an
// error wrapping ErrSchemaMissing when the version table does not exist.
func readVersion(ctx context.Context, q queryer, n names) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL`,
		n.qVersion, n.qTable).Scan(&exists); err != nil {
		return 0, fmt.Errorf("pgstore: reading schema version of %s: %w", n.qTable, unreachable(err))
	}
	if !exists {
		return 0, fmt.Errorf("%w: %s", ErrSchemaMissing, missingHint(n))
	}
	var v int
	if err := q.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+n.qVersion).Scan(&v); err != nil {
		return 0, fmt.Errorf("pgstore: reading schema version of %s: %w", n.qTable, unreachable(err))
	}
	return v, nil
}

func missingHint(n names) string {
	return fmt.Sprintf("table %s does not exist: run pgstore.Migrate(ctx, pool, pgstore.WithSchema(%q), pgstore.WithTable(%q)) "+
		"or apply the SQL from pgstore.MigrationSQL (see docs/POSTGRES.md)", n.qTable, n.schema, n.table)
}

// unreachable marks a failure to reach the server (connect, network, a
// server shutting down or refusing connections) as idem.ErrStoreUnavailable,
// keeping the cause, so New and Migrate fail the way the store's calls do.
// An answer from the server (a missing privilege, a missing table), the
// caller's ctx ending, and errors already marked are returned as they are.
func unreachable(err error) error {
	if errors.Is(err, idem.ErrStoreUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // admin or crash shutdown, cannot connect now
			pe.Code == "53300": // too many connections
		default:
			return err
		}
	}
	return fmt.Errorf("%w: %w", idem.ErrStoreUnavailable, deduped(err))
}

// deduped returns err with a message that says each of its lines once, on
// one line. pgx lists every connection attempt on a line of its own, and
// with sslmode=prefer (the default) it tries each address twice, with TLS
// and without, so a refused port read "dial error: … connection refused"
// twice. errors.Is and errors.As see err as it is.
func deduped(err error) error {
	lines := strings.Split(err.Error(), "\n")
	if len(lines) == 1 {
		return err
	}
	seen := make(map[string]bool, len(lines))
	kept := lines[:0]
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l != "" && !seen[l] {
			seen[l] = true
			kept = append(kept, l)
		}
	}
	return dedupedError{msg: strings.Join(kept, " "), err: err}
}

type dedupedError struct {
	msg string
	err error
}

func (e dedupedError) Error() string { return e.msg }
func (e dedupedError) Unwrap() error { return e.err }

// isUndefined reports whether err says the table or schema does not exist.
func isUndefined(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "42P01", "3F000", "42703", "42883": // undefined table, schema, column, function
			return true
		}
	}
	return false
}
