package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Recovery points (idemstore.Stepper). A call's steps live in its record's row,
// in two array columns (schema version 5): step_names and step_data, the
// i-th name with the i-th data, in the order they were recorded. So the
// claim statement reads and returns them in its one round trip, on the
// row version it locked: a claim that resumes a retained row (a takeover
// of an expired lease, a claim after a release) keeps and returns them, a
// claim that makes the row anew clears them. A release and ForceRelease
// keep them; a completion or failure (CompleteInTx too) clears them, its
// result taking their place. Retention deletes them with their row.

var _ idemstore.Stepper = (*Store)(nil)

// MaxStepBytes is how many bytes the steps of one call (names and data)
// may take in all: 512 MiB, half of the 1 GB Postgres holds in one field.
// A step that would pass it is refused with idem.ErrResultTooLarge.
const MaxStepBytes = 512 << 20

// CheckStepName refuses a step name that alone takes more than the steps
// of a call may. The Guard calls it before the step's function runs (see
// idemstore.Stepper).
func (s *Store) CheckStepName(name string) error {
	if len(name) > s.maxStep {
		return fmt.Errorf("pgstore: a %d-byte step name: the steps of a call may take %d bytes in all", len(name), s.maxStep)
	}
	return nil
}

// SaveStep implements idemstore.Stepper: one UPDATE, a compare-and-set on
// owner, fence and state like Complete, that appends the step to the row.
// A step the call recorded already keeps its first data. StepInTx records
// a step in the caller's transaction instead.
func (s *Store) SaveStep(ctx context.Context, l idemstore.Lease, name string, data []byte) error {
	if p, ok := ctx.Value(stepTxKey{}).(*stepTx); ok && p.s == s && p.name == name && p.tx != nil && !p.saved {
		// StepInTx's step: recorded in its transaction, committed with
		// the step's own writes.
		if err := s.saveStep(ctx, p.tx, l, name, data); err != nil {
			return err
		}
		p.saved = true
		return nil
	}
	c, err := s.acquire(ctx, "step")
	if err != nil {
		return err
	}
	defer c.Release()
	return s.saveStep(ctx, c, l, name, data)
}

// saveStep runs the saveStep statement on q (a connection or the caller's
// transaction).
func (s *Store) saveStep(ctx context.Context, q queryer, l idemstore.Lease, name string, data []byte) error {
	if data == nil {
		data = []byte{} // a NULL element would read back as no data at all
	}
	if n := len(name) + len(data); n > s.maxStep {
		return fmt.Errorf("pgstore: step %q of %s: %w: %d bytes, the steps of a call may take %d in all", name, l.Key, idem.ErrResultTooLarge, n, s.maxStep)
	}
	var (
		held bool
		size int64
	)
	err := q.QueryRow(ctx, s.q.saveStep, l.Key, l.Owner[:], int64(l.Fence), []byte(name), data, s.maxStep).Scan(&held, &size)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: %s fence %d: step %q", idem.ErrLeaseLost, l.Key, l.Fence, name)
	case err != nil:
		return s.wrap(ctx, "step", l.Key, err)
	case !held:
		return fmt.Errorf("pgstore: step %q of %s: %w: the call's steps would take %d bytes, at most %d", name, l.Key, idem.ErrResultTooLarge, size, s.maxStep)
	}
	return nil
}

// stepsOf pairs a claimed row's step columns.
func stepsOf(key string, names, data [][]byte) (map[string][]byte, error) {
	if len(names) != len(data) {
		return nil, fmt.Errorf("%w: %s: %d step names for %d step results", idem.ErrCorruptRecord, key, len(names), len(data))
	}
	if len(names) == 0 {
		return nil, nil
	}
	steps := make(map[string][]byte, len(names))
	for i, name := range names {
		if data[i] == nil {
			return nil, fmt.Errorf("%w: %s: step %q without its result", idem.ErrCorruptRecord, key, name)
		}
		steps[string(name)] = data[i]
	}
	return steps, nil
}
