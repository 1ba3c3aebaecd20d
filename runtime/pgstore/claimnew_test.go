package pgstore

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/jackc/pgx/v5"
)

// sqlLog is a pgx tracer keeping the first word of every statement.
type sqlLog struct {
	mu    sync.Mutex
	words []string
}

func (l *sqlLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	l.words = append(l.words, strings.Fields(d.SQL)[0])
	l.mu.Unlock()
	return ctx
}

func (l *sqlLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (l *sqlLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.words
	l.words = nil
	return w
}

// TestClaimNewKey: the claim of a key without a row is one plain INSERT
// (claimNew), its finish one plain UPDATE (finishPlain), and a process that has not seen a key whose row is there
// (another process made it) gets from the claim statement what the old
// path answered: the INSERT ... ON CONFLICT DO NOTHING neither claimed
// nor changed the row.
func TestClaimNewKey(t *testing.T) {
	log := &sqlLog{}
	a, clock := tracedStore(t, log)
	ctx := context.Background()
	claim := func(s *Store, key string, fp byte) (idemstore.ClaimResult, []string) {
		t.Helper()
		log.take()
		res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: token(fp), Fingerprint: fingerprint(fp), Lease: time.Minute, TTL: time.Hour})
		if err != nil {
			t.Fatalf("claim %s: %v", key, err)
		}
		return res, log.take()
	}
	for key, f := range finishers(ctx, a, "expired") {
		res, words := claim(a, key, 1)
		if diff := cmp.Diff([]string{"INSERT"}, words); res.Status != idemstore.ClaimAcquired || res.Fence != 1 || diff != "" {
			t.Fatalf("first claim of %s: %+v; statements (-want +got):\n%s", key, res, diff)
		}
		if err := f(idemstore.Lease{Key: key, Owner: token(1), Fence: res.Fence, Duration: time.Minute, TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if words := log.take(); key != "expired" && !cmp.Equal(words, []string{"UPDATE"}) {
			t.Errorf("finishing %s ran %v, want one plain UPDATE", key, words)
		}
	}
	b, err := New(ctx, a.pool, WithSchema(a.n.schema), WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	clock.Advance(2 * time.Minute) // past the leases, within retention
	if res, _ := claim(a, "running", 1); res.Status != idemstore.ClaimAcquired {
		t.Fatalf("claim running: %+v", res)
	}
	for _, tc := range []struct {
		key   string
		fp    byte
		want  idemstore.ClaimStatus
		fence uint64
	}{
		{key: "completed", fp: 1, want: idemstore.ClaimCompleted, fence: 1},
		{key: "completed", fp: 2, want: idemstore.ClaimMismatch, fence: 1},
		{key: "failed", fp: 1, want: idemstore.ClaimFailed, fence: 1},
		{key: "released", fp: 1, want: idemstore.ClaimAcquired, fence: 2},
		{key: "released", fp: 2, want: idemstore.ClaimMismatch, fence: 2}, // the row above, another payload
		{key: "expired", fp: 1, want: idemstore.ClaimTakenOver, fence: 2},
		{key: "running", fp: 1, want: idemstore.ClaimInProgress, fence: 1},
	} {
		res, words := claim(b, tc.key, tc.fp)
		if res.Status != tc.want || res.Fence != tc.fence {
			t.Errorf("%s fp %d from another store: %v fence %d, want %v fence %d (statements %v)",
				tc.key, tc.fp, res.Status, res.Fence, tc.want, tc.fence, words)
		}
	}
}
