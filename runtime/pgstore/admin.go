package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

var _ idemstore.Admin = (*Store)(nil)

// listPage is how many rows List reads per statement.
const listPage = 500

// List calls fn with every record whose key starts with prefix, live or
// not yet cleaned up, in key order, until fn returns an error (which List
// returns). It reads in pages by key, holding no connection or lock while
// fn runs, so fn may call the store.
func (s *Store) List(ctx context.Context, prefix string, fn func(idemstore.Record) error) error {
	var upper any // keys < upper share the prefix (the table collates bytewise)
	if u, ok := prefixEnd(prefix); ok {
		upper = u
	}
	after := ""
	first := true
	for {
		page, err := s.listPage(ctx, prefix, upper, after, first)
		if err != nil {
			return err
		}
		for _, r := range page {
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(page) < listPage {
			return nil
		}
		after, first = page[len(page)-1].Key, false
	}
}

func (s *Store) listPage(ctx context.Context, prefix string, upper any, after string, first bool) ([]idemstore.Record, error) {
	c, err := s.acquire(ctx, "list")
	if err != nil {
		return nil, err
	}
	defer c.Release()
	rows, err := c.Query(ctx, s.q.list, prefix, upper, after, first, listPage)
	if err != nil {
		return nil, s.wrap(ctx, "list", prefix, err)
	}
	defer rows.Close()
	var out []idemstore.Record
	for rows.Next() {
		var (
			key       string
			r         row
			updatedAt time.Time
			claimedAt *time.Time
		)
		if err := rows.Scan(&key, &r.state, &r.owner, &r.fence, &r.fp, &r.result,
			&r.leaseUntil, &r.expiresAt, &updatedAt, &claimedAt, &r.format); err != nil {
			return nil, s.wrap(ctx, "list", prefix, err)
		}
		if err := r.check(key); err != nil {
			return nil, err
		}
		out = append(out, r.record(key, updatedAt, claimedAt))
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(ctx, "list", prefix, err)
	}
	return out, nil
}

// prefixEnd returns the smallest string greater than every string with
// the prefix, if there is one.
func prefixEnd(prefix string) (string, bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

// ForceRelease releases key whatever its owner, clears the owner and bumps
// the fence, so a still-running owner can neither heartbeat nor complete
// and the next claim acquires the key with a higher fence. The record
// keeps its remaining retention. Waiters are woken.
func (s *Store) ForceRelease(ctx context.Context, key string) (idemstore.Record, error) {
	s.seen.Drop(key) // the next claim of key is likely a new run
	return s.queryRecord(ctx, "force release", key, s.q.forceRelease, []any{key, s.ts(), s.n.channel})
}

// queryRecord runs query with args for op on key on a pooled connection
// and scans the record's columns and then extra: ErrNotFound when it
// returns no row, the record of a row that passes check otherwise.
func (s *Store) queryRecord(ctx context.Context, op, key, query string, args []any, extra ...any) (idemstore.Record, error) {
	c, err := s.acquire(ctx, op)
	if err != nil {
		return idemstore.Record{}, err
	}
	defer c.Release()
	var (
		r         row
		updatedAt time.Time
		claimedAt *time.Time
	)
	dest := append([]any{&r.state, &r.owner, &r.fence, &r.fp, &r.result,
		&r.leaseUntil, &r.expiresAt, &updatedAt, &claimedAt, &r.format}, extra...)
	err = c.QueryRow(ctx, query, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return idemstore.Record{}, fmt.Errorf("%w: %s", idem.ErrNotFound, key)
	}
	if err != nil {
		return idemstore.Record{}, s.wrap(ctx, op, key, err)
	}
	if err := r.check(key); err != nil {
		return idemstore.Record{}, err
	}
	return r.record(key, updatedAt, claimedAt), nil
}

// record builds the record of row r; claimedAt is nil for a row claimed
// before schema version 4 (the zero ClaimedAt).
func (r *row) record(key string, updatedAt time.Time, claimedAt *time.Time) idemstore.Record {
	var claimed time.Time
	if claimedAt != nil {
		claimed = *claimedAt
	}
	return idemstore.Record{
		Key:         key,
		State:       idemstore.State(r.state),
		Owner:       idemstore.Token(r.owner),
		Fence:       uint64(r.fence),
		Fingerprint: idemstore.Fingerprint(r.fp),
		Result:      nilIfEmpty(r.result), // as the memory store: no bytes is nil
		LeaseUntil:  r.leaseUntil,         // for finished records: the last lease, as the memory store
		ExpiresAt:   r.expiresAt,
		UpdatedAt:   updatedAt,
		ClaimedAt:   claimed,
	}
}
