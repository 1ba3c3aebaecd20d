package pgstore

import (
	"context"
	"errors"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A replay is answered by a read. A claim of a key the hint (recent)
// names first runs the replay SELECT; when
// it finds the key's live record completed or failed with the claim's
// fingerprint, that record is the answer, and nothing is written: no
// claim statement, no transaction id, no row lock. Anything else (no row,
// past its retention, released, in progress, another fingerprint, a row
// this binary cannot read) goes to the claim statement, which decides
// under its row lock as it always did; a record that changes after the
// read is the claim's to handle.
//
// The read goes first only on a hint because on a new key it is a round
// trip more for nothing: docs/BENCHMARKS.md has the numbers of both.

// replay answers req from a read when its key holds a live, finished
// record with req's fingerprint that row.check accepts (the statement
// filters on all of it); ok is false when the claim statement must decide.
func (s *Store) replay(ctx context.Context, c *pgxpool.Conn, req idemstore.ClaimRequest) (res idemstore.ClaimResult, ok bool, err error) {
	// One value on the heap for the argument and the scan destinations
	// (req would escape whole through req.Fingerprint[:]).
	var r struct {
		fp     idemstore.Fingerprint
		state  int16
		fence  int64
		result []byte
	}
	r.fp = req.Fingerprint
	err = c.QueryRow(ctx, s.q.replay, req.Key, r.fp[:], s.ts()).Scan(&r.state, &r.fence, &r.result)
	if errors.Is(err, pgx.ErrNoRows) {
		return idemstore.ClaimResult{}, false, nil
	}
	if err != nil {
		return idemstore.ClaimResult{}, false, s.wrap(ctx, "claim", req.Key, err)
	}
	st := idemstore.ClaimCompleted
	if r.state == stFailed {
		st = idemstore.ClaimFailed
	}
	return idemstore.ClaimResult{Status: st, Fence: uint64(r.fence), Result: idemstore.Result{Data: nilIfEmpty(r.result)}}, true, nil
}
