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

// recentKeys is how many keys the hint remembers per store.
const recentKeys = 4096

// recent is the hint that a claim is likely a duplicate: a bounded,
// process-local set of the keys this store finished (completed or
// failed) or found claimed (in progress, completed or failed) lately. A
// release takes its key out; the oldest keys leave first.
type recent struct {
	mu    sync.Mutex
	keys  map[string]struct{}
	order []string
	at    int
}

func (h *recent) has(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.keys[key]
	return ok
}

func (h *recent) add(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.keys[key]; ok {
		return
	}
	if h.keys == nil {
		h.keys, h.order = make(map[string]struct{}, recentKeys), make([]string, recentKeys)
	}
	delete(h.keys, h.order[h.at])
	h.order[h.at], h.keys[key] = key, struct{}{}
	h.at = (h.at + 1) % recentKeys
}

func (h *recent) drop(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.keys, key)
}

// note updates the hint with a claim's answer.
func (h *recent) note(key string, st idem.ClaimStatus) {
	switch st {
	case idem.ClaimInProgress, idem.ClaimCompleted, idem.ClaimFailed:
		h.add(key)
	}
}

// readMode chooses when a claim reads first: on the hint (the default),
// always or never (benchmarks compare the three).
type readMode int8

const (
	readOnHint readMode = iota
	readAlways
	readNever
)

// readsFirst reports whether a claim of key runs the replay read first.
func (s *Store) readsFirst(key string) bool {
	switch s.readFirst {
	case readAlways:
		return true
	case readNever:
		return false
	}
	return s.seen.has(key)
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
