package pgstore

import (
	"context"
	"fmt"
	"time"
)

// CleanupBatch deletes at most n rows that are no longer live (finished or
// released past their TTL, in-progress past lease + TTL) and returns how
// many it deleted. One statement, one short transaction. Many processes
// may run it at once: each row is deleted by exactly one of them, rows
// locked by another cleaner or by a claim are skipped, and a row that
// became live again (claimed) is never deleted.
func (s *Store) CleanupBatch(ctx context.Context, n int) (int, error) {
	c, err := s.acquire(ctx, "cleanup")
	if err != nil {
		return 0, err
	}
	defer c.Release()
	var deleted int64
	if err := c.QueryRow(ctx, s.q.cleanup, n, s.ts()).Scan(&deleted); err != nil {
		return 0, s.wrap(ctx, "cleanup", s.n.qTable, err)
	}
	return int(deleted), nil
}

// Cleanup deletes every row that is no longer live, in batches of
// WithCleanupBatch (default 5000), until a batch comes back short. It
// returns the total deleted. First it gives rows written before schema
// version 6 the sweep_at by which cleanup finds them.
func (s *Store) Cleanup(ctx context.Context) (int, error) {
	if err := s.backfillSweep(ctx); err != nil {
		return 0, err
	}
	total := 0
	for {
		n, err := s.CleanupBatch(ctx, s.cfg.sweepBatch)
		total += n
		if err != nil {
			return total, err
		}
		if n < s.cfg.sweepBatch {
			break
		}
	}
	// Expired per-entity order rows too (not counted: they are not records).
	for {
		c, err := s.acquire(ctx, "cleanup")
		if err != nil {
			return total, err
		}
		var n int64
		err = c.QueryRow(ctx, s.q.cleanupOrder, s.cfg.sweepBatch, s.ts()).Scan(&n)
		c.Release()
		if err != nil {
			return total, s.wrap(ctx, "cleanup", s.n.qOrder, err)
		}
		if int(n) < s.cfg.sweepBatch {
			return total, nil
		}
	}
}

// backfillSweep sets the sweep_at of rows written before schema version
// 6, in batches of WithCleanupBatch, so that cleanup finds them by its
// index (migrations/0006_sweep_at.sql).
func (s *Store) backfillSweep(ctx context.Context) error {
	for {
		c, err := s.acquire(ctx, "cleanup")
		if err != nil {
			return err
		}
		var n int64
		err = c.QueryRow(ctx, s.q.backfillSweep, s.cfg.sweepBatch).Scan(&n)
		c.Release()
		if err != nil {
			return s.wrap(ctx, "cleanup", s.n.qTable, err)
		}
		if int(n) < s.cfg.sweepBatch {
			return nil
		}
	}
}

// sweep runs Cleanup every cfg.sweepEvery until the store closes.
func (s *Store) sweep(ctx context.Context) {
	defer s.bg.Done()
	t := time.NewTicker(s.cfg.sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.Cleanup(ctx); err != nil && ctx.Err() == nil {
			if f := s.cfg.onError; f != nil {
				f(fmt.Errorf("pgstore: sweeper: %w", err))
			}
		}
	}
}
