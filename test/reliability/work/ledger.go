package work

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Ledger is the side-effect record of a reliability run: a Postgres schema
// of its own holding one row per execution and one business row per key.
// Times are the database's clock_timestamp(), one clock for every process.
type Ledger struct {
	Pool   *pgxpool.Pool
	Schema string
}

// Setup creates the run's schema and tables.
func (l *Ledger) Setup(ctx context.Context) error {
	s := pgx.Identifier{l.Schema}.Sanitize()
	_, err := l.Pool.Exec(ctx, `
CREATE SCHEMA IF NOT EXISTS `+s+`;
CREATE TABLE IF NOT EXISTS `+s+`.executions (
	id          bigserial PRIMARY KEY,
	scenario    text        NOT NULL,
	key         text        NOT NULL,
	fence       bigint      NOT NULL,
	pid         int         NOT NULL,
	nonce       text        NOT NULL,
	started_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
	ended_at    timestamptz,
	ctx_live    boolean,
	biz_accepted boolean
);
CREATE INDEX IF NOT EXISTS executions_key ON `+s+`.executions (key, fence);
CREATE TABLE IF NOT EXISTS `+s+`.biz (
	key        text PRIMARY KEY,
	fence      bigint      NOT NULL,
	pid        int         NOT NULL,
	nonce      text        NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);`)
	if err != nil {
		return fmt.Errorf("ledger: setup schema %s: %w", l.Schema, err)
	}
	return nil
}

// Drop removes the run's schema.
func (l *Ledger) Drop(ctx context.Context) error {
	_, err := l.Pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{l.Schema}.Sanitize()+` CASCADE`)
	return err
}

func (l *Ledger) table(t string) string { return pgx.Identifier{l.Schema, t}.Sanitize() }

// Record inserts the row of one execution and returns its id.
func (l *Ledger) Record(ctx context.Context, scenario, key string, fence uint64, pid int, nonce string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var id int64
	err := l.Pool.QueryRow(ctx, `INSERT INTO `+l.table("executions")+` (scenario, key, fence, pid, nonce) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
		scenario, key, int64(fence), pid, nonce).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("ledger: record execution of %s fence %d: %w", key, fence, err)
	}
	return id, nil
}

// Finish marks an execution's end: whether its ctx was still live (it had
// not been told its lease was lost) and whether its business write landed.
func (l *Ledger) Finish(ctx context.Context, id int64, ctxLive, biz bool) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := l.Pool.Exec(ctx, `UPDATE `+l.table("executions")+` SET ended_at = clock_timestamp(), ctx_live = $2, biz_accepted = $3 WHERE id = $1`, id, ctxLive, biz)
	if err != nil {
		return fmt.Errorf("ledger: finish execution %d: %w", id, err)
	}
	return nil
}

// Biz is the fence-guarded business write: it lands only if no write with
// an equal or higher fence landed before, so an owner that lost its lease
// (a lower fence) cannot overwrite its successor's work.
func (l *Ledger) Biz(ctx context.Context, key string, fence uint64, pid int, nonce string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tag, err := l.Pool.Exec(ctx, `INSERT INTO `+l.table("biz")+` AS b (key, fence, pid, nonce) VALUES ($1, $2, $3, $4)
ON CONFLICT (key) DO UPDATE SET fence = EXCLUDED.fence, pid = EXCLUDED.pid, nonce = EXCLUDED.nonce, updated_at = clock_timestamp()
WHERE b.fence < EXCLUDED.fence`, key, int64(fence), pid, nonce)
	if err != nil {
		return false, fmt.Errorf("ledger: business write of %s fence %d: %w", key, fence, err)
	}
	return tag.RowsAffected() == 1, nil
}
