package pgstore

import (
	"bytes"
	"context"
	"encoding/binary"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
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
	fp := req.Fingerprint // what escapes to the heap, not all of req
	rows, err := c.Query(ctx, s.q.replay, req.Key, fp[:], s.ts())
	if err != nil {
		return idemstore.ClaimResult{}, false, s.wrap(ctx, "claim", req.Key, err)
	}
	var r replayRow
	found := rows.Next()
	if found {
		r, err = readReplayRow(rows)
	}
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return idemstore.ClaimResult{}, false, s.wrap(ctx, "claim", req.Key, err)
	}
	if !found {
		return idemstore.ClaimResult{}, false, nil
	}
	st := idemstore.ClaimCompleted
	if r.state == stFailed {
		st = idemstore.ClaimFailed
	}
	return idemstore.ClaimResult{Status: st, Fence: uint64(r.fence), Result: idemstore.Result{Data: nilIfEmpty(r.result)}}, true, nil
}

// replayRow is the replay statement's row.
type replayRow struct {
	state  int16
	fence  int64
	result []byte
}

// readReplayRow decodes the replay statement's row from its binary
// columns (smallint, bigint, bytea: what pgx asks for when it prepares the
// statement, its default) without pgx's per-row scan plans, which were a
// third of a replay's allocations beyond a raw read's (docs/BENCHMARKS.md
// has the gain); any other form of the row (a pool running the simple
// protocol gets text) goes through Scan.
func readReplayRow(rows pgx.Rows) (replayRow, error) {
	fd, v := rows.FieldDescriptions(), rows.RawValues()
	if len(fd) == 3 && len(v) == 3 &&
		binaryCol(fd[0], pgtype.Int2OID) && len(v[0]) == 2 &&
		binaryCol(fd[1], pgtype.Int8OID) && len(v[1]) == 8 &&
		binaryCol(fd[2], pgtype.ByteaOID) && v[2] != nil {
		return replayRow{
			state:  int16(binary.BigEndian.Uint16(v[0])),
			fence:  int64(binary.BigEndian.Uint64(v[1])),
			result: bytes.Clone(v[2]), // v is the connection's buffer
		}, nil
	}
	var r replayRow
	err := rows.Scan(&r.state, &r.fence, &r.result)
	return r, err
}

func binaryCol(fd pgconn.FieldDescription, oid uint32) bool {
	return fd.Format == pgx.BinaryFormatCode && fd.DataTypeOID == oid
}
