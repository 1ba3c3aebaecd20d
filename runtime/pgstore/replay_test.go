package pgstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TestReplayWritesNothing: a replay (the key's live record completed or
// failed with the claim's fingerprint) is answered by a read. The store's
// only connection is switched to read-only transactions after the records
// are made, so any statement that could write (the claim's INSERT ... ON
// CONFLICT, even one that changes no row) fails; every other claim still
// takes the write path.
func TestReplayWritesNothing(t *testing.T) {
	pool := poolWith(t, 1)
	s := newStore(t, pool)
	ctx := context.Background()
	for key, f := range finishers(ctx, s, "running") {
		res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: token(1), Fingerprint: fingerprint(1), Lease: time.Minute, TTL: time.Hour})
		if err != nil || res.Status != idemstore.ClaimAcquired {
			t.Fatalf("claim %s: %v %v", key, res.Status, err)
		}
		if err := f(idemstore.Lease{Key: key, Owner: token(1), Fence: res.Fence, Duration: time.Minute, TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, "SET default_transaction_read_only = on"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key       string
		fp        byte
		want      idemstore.ClaimStatus
		wantWrite bool
	}{
		{key: "completed", fp: 1, want: idemstore.ClaimCompleted},
		{key: "failed", fp: 1, want: idemstore.ClaimFailed},
		{key: "completed", fp: 2, wantWrite: true}, // mismatch: the claim statement answers
		{key: "released", fp: 1, wantWrite: true},
		{key: "running", fp: 1, wantWrite: true},
	} {
		res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: tc.key, Owner: token(2), Fingerprint: fingerprint(tc.fp), Lease: time.Minute, TTL: time.Hour})
		switch {
		case tc.wantWrite && (err == nil || !strings.Contains(err.Error(), "read-only")):
			t.Errorf("%s fp %d: %v %v, want the write path (refused: read-only)", tc.key, tc.fp, res.Status, err)
		case !tc.wantWrite && (err != nil || res.Status != tc.want):
			t.Errorf("%s fp %d: %v %v, want %v answered by a read", tc.key, tc.fp, res.Status, err, tc.want)
		}
	}
}

// TestReplayLeavesUnsoundRows: the replay read answers only from a row the
// claim statement's check accepts; any other completed row goes to the
// claim statement, which refuses it as before (never a replay of a row
// this binary cannot vouch for).
func TestReplayLeavesUnsoundRows(t *testing.T) {
	pool := poolWith(t, 2)
	s := newStore(t, pool)
	ctx := context.Background()
	for _, tc := range []struct {
		name, set string
		want      error
	}{
		{"short owner", `owner = '\x00'`, idem.ErrCorruptRecord},
		{"no result", `result = NULL`, idem.ErrCorruptRecord},
		{"fence 0", `fence = 0`, idem.ErrCorruptRecord},
		{"format 0", `format = 0`, idem.ErrCorruptRecord},
		{"newer format", `format = 2`, ErrSchemaTooNew},
		{"unknown state", `state = 9`, idem.ErrCorruptRecord},
		{"short fingerprint", `fingerprint = '\x00'`, idem.ErrCorruptRecord},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "unsound-" + tc.name
			req := idemstore.ClaimRequest{Key: key, Owner: token(1), Fingerprint: fingerprint(1), Lease: time.Minute, TTL: time.Hour}
			res, err := s.Claim(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Complete(ctx, idemstore.Lease{Key: key, Owner: token(1), Fence: res.Fence, TTL: time.Hour}, idemstore.Result{Data: []byte("r")}); err != nil {
				t.Fatal(err)
			}
			if !s.seen.Has(key) {
				t.Fatal("the completed key is not in the replay hint: the test would not reach the replay read")
			}
			if _, err := pool.Exec(ctx, `UPDATE `+s.n.qTable+` SET `+tc.set+` WHERE key = $1`, key); err != nil {
				t.Fatal(err)
			}
			res, err = s.Claim(ctx, req)
			if !errors.Is(err, tc.want) {
				t.Errorf("claim: %v %v, want %v", res.Status, err, tc.want)
			}
		})
	}
}

// TestReplayExecModes: the replay read answers alike whatever protocol the
// caller's pool runs: binary columns when pgx prepares the statement (the
// decoding of readReplayRow), text ones on the simple protocol (Scan).
func TestReplayExecModes(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []pgx.QueryExecMode{
		pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeDescribeExec,
		pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol,
	} {
		t.Run(mode.String(), func(t *testing.T) {
			pool := newPool(t, func(c *pgxpool.Config) { c.MaxConns = 2; c.ConnConfig.DefaultQueryExecMode = mode })
			s := newStore(t, pool)
			for _, tc := range []struct {
				key    string
				finish func(context.Context, idemstore.Lease, idemstore.Result) error
				want   idemstore.ClaimResult
			}{
				{"done", s.Complete, idemstore.ClaimResult{Status: idemstore.ClaimCompleted, Fence: 1, Result: idemstore.Result{Data: []byte(`"r"`)}}},
				{"empty", s.Complete, idemstore.ClaimResult{Status: idemstore.ClaimCompleted, Fence: 1}},
				{"failed", s.Fail, idemstore.ClaimResult{Status: idemstore.ClaimFailed, Fence: 1, Result: idemstore.Result{Data: []byte(`"e"`)}}},
			} {
				req := idemstore.ClaimRequest{Key: tc.key, Owner: token(1), Fingerprint: fingerprint(1), Lease: time.Minute, TTL: time.Hour}
				res, err := s.Claim(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				if err := tc.finish(ctx, idemstore.Lease{Key: tc.key, Owner: token(1), Fence: res.Fence, TTL: time.Hour}, tc.want.Result); err != nil {
					t.Fatal(err)
				}
				req.Owner = token(2)
				c, err := pool.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				got, ok, err := s.replay(ctx, c, req)
				c.Release()
				if err != nil || !ok {
					t.Fatalf("%s: replay read: ok %v, %v", tc.key, ok, err)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("%s: replay read (-want +got):\n%s", tc.key, diff)
				}
			}
		})
	}
}
