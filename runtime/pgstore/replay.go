package pgstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
)

// A replay is answered by a read. A claim of a key this process has
// claimed (or found claimed) recently first runs the replay SELECT; when
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

// recentKeys is how many keys the hint remembers per store.
const recentKeys = 4096

// recent is a bounded, process-local set of keys: the hint that a claim
// of one of them is likely a duplicate. Oldest keys leave first.
type recent struct {
	mu   sync.Mutex
	set  map[string]struct{}
	ring []string
	next int
}

func (h *recent) has(key string) bool {
	h.mu.Lock()
	_, ok := h.set[key]
	h.mu.Unlock()
	return ok
}

func (h *recent) add(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.set[key]; ok {
		return
	}
	if h.set == nil {
		h.set = make(map[string]struct{}, recentKeys)
		h.ring = make([]string, recentKeys)
	}
	delete(h.set, h.ring[h.next])
	h.ring[h.next] = key
	h.set[key] = struct{}{}
	h.next = (h.next + 1) % len(h.ring)
}

// readMode chooses when a claim reads first: on the hint (the default),
// always or never (benchmarks compare the three).
type readMode int8

const (
	readOnHint readMode = iota
	readAlways
	readNever
)

// readsFirst reports whether a claim of key runs the replay read first,
// and remembers key for the next claim.
func (s *Store) readsFirst(key string) bool {
	switch s.readFirst {
	case readAlways:
		return true
	case readNever:
		return false
	}
	if s.seen.has(key) {
		return true
	}
	s.seen.add(key)
	return false
}

// replay answers req from a read when its key holds a live, finished
// record with req's fingerprint; ok is false when the claim statement
// must decide.
func (s *Store) replay(ctx context.Context, c *pgxpool.Conn, req idem.ClaimRequest) (res idem.ClaimResult, ok bool, err error) {
	var (
		r                    row
		now                  time.Time
		updatedAt, claimedAt *time.Time
		names, data          [][]byte
	)
	err = c.QueryRow(ctx, s.q.get, req.Key, s.ts()).Scan(&r.state, &r.owner, &r.fence, &r.fp, &r.result,
		&r.leaseUntil, &r.expiresAt, &updatedAt, &claimedAt, &r.format, &now, &names, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return idem.ClaimResult{}, false, nil
	}
	if err != nil {
		return idem.ClaimResult{}, false, s.wrap(ctx, "claim", req.Key, err)
	}
	if r.check(req.Key) != nil || !now.Before(r.expiresAt) || [32]byte(r.fp) != req.Fingerprint ||
		(r.state != stCompleted && r.state != stFailed) {
		return idem.ClaimResult{}, false, nil
	}
	return r.busyResult(req.Fingerprint), true, nil
}
