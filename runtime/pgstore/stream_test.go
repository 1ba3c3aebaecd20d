package pgstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

// TestStreamItemsTooLarge: a run's items may take maxStream bytes of data
// in all.
func TestStreamItemsTooLarge(t *testing.T) {
	s := newStore(t, nil)
	s.maxStream = 999
	idemtest.CheckItemTooLarge(t, s, "big", token(1), "1000 bytes")
}

// streamRun claims key as owner and appends items to its stream.
func streamRun(t *testing.T, s *Store, key string, owner byte, items ...string) idemstore.Lease {
	t.Helper()
	ctx := context.Background()
	l := idemstore.Lease{Key: key, Owner: token(owner), Duration: time.Minute, TTL: time.Hour}
	res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: l.Owner, Fingerprint: fingerprint(1), Lease: l.Duration, TTL: l.TTL})
	if err != nil || (res.Status != idemstore.ClaimAcquired && res.Status != idemstore.ClaimTakenOver) {
		t.Fatalf("Claim(%s) = %+v, %v", key, res, err)
	}
	l.Fence = res.Fence
	for i, it := range items {
		if err := s.AppendItem(ctx, l, uint64(i), []byte(it)); err != nil {
			t.Fatalf("AppendItem(%d): %v", i, err)
		}
	}
	return l
}

// itemRows is the rows of key in the items table, as "fence/seq=data".
func itemRows(t *testing.T, s *Store, key string) []string {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT fence, seq, data FROM `+s.n.qItems+` WHERE key = $1 ORDER BY fence, seq`, key)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var fence, seq int64
		var data []byte
		if err := rows.Scan(&fence, &seq, &data); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d/%d=%s", fence, seq, data))
	}
	return out
}

// TestStreamItemRows: which rows of the items table a key keeps after
// what removes or replaces its run, and what a reader sees of them.
func TestStreamItemRows(t *testing.T) {
	ctx := context.Background()
	clock := newManualClock()
	s := newStore(t, nil, WithClock(clock.Now))
	for _, c := range []struct {
		name      string
		then      func(t *testing.T, key string, l idemstore.Lease)
		rows      []string
		wantItems []string
	}{
		{"deleted", func(t *testing.T, key string, _ idemstore.Lease) {
			if err := s.Delete(ctx, key); err != nil {
				t.Fatal(err)
			}
		}, nil, nil},
		{"cleaned up", func(t *testing.T, key string, l idemstore.Lease) {
			if err := s.Complete(ctx, l, idemstore.Result{Data: []byte("2")}); err != nil {
				t.Fatal(err)
			}
			clock.Advance(2 * time.Hour)
			if n, err := s.Cleanup(ctx); err != nil || n == 0 {
				t.Fatalf("Cleanup = %d, %v", n, err)
			}
		}, nil, nil},
		{"released, claimed, not appended to", func(t *testing.T, key string, l idemstore.Lease) {
			if err := s.Release(ctx, l); err != nil {
				t.Fatal(err)
			}
			streamRun(t, s, key, 2)
		}, []string{"1/0=a", "1/1=b"}, nil},
		{"released, claimed, appended to", func(t *testing.T, key string, l idemstore.Lease) {
			if err := s.Release(ctx, l); err != nil {
				t.Fatal(err)
			}
			streamRun(t, s, key, 2, "c")
		}, []string{"2/0=c"}, []string{"c"}},
		{"row deleted by hand, claimed again", func(t *testing.T, key string, _ idemstore.Lease) {
			if _, err := s.pool.Exec(ctx, `DELETE FROM `+s.n.qTable+` WHERE key = $1`, key); err != nil {
				t.Fatal(err)
			}
			streamRun(t, s, key, 2, "c")
		}, []string{"1/0=c", "1/1=b"}, []string{"c"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := "rows:" + c.name
			l := streamRun(t, s, key, 1, "a", "b")
			c.then(t, key, l)
			if diff := cmp.Diff(c.rows, itemRows(t, s, key)); diff != "" {
				t.Errorf("item rows (-want +got):\n%s", diff)
			}
			b, err := s.ReadStream(ctx, idemstore.StreamRead{Key: key})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range b.Items {
				got = append(got, string(it))
			}
			if diff := cmp.Diff(c.wantItems, got); diff != "" || b.Count != uint64(len(c.wantItems)) {
				t.Errorf("items read (%d counted; -want +got):\n%s", b.Count, diff)
			}
		})
	}
}

// TestStreamReadersShareTheListener: waiting readers hold no pool
// connection while they sleep, and one append's NOTIFY, through the
// store's one listener, wakes them all long before the poll interval.
func TestStreamReadersShareTheListener(t *testing.T) {
	const readers = 16
	ctx := context.Background()
	pool := poolWith(t, 4)
	s := newStore(t, pool, WithPollInterval(time.Minute))
	l := streamRun(t, s, "k", 1, "a")
	done := make(chan error, readers)
	for range readers {
		go func() {
			rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			b, err := s.ReadStream(rctx, idemstore.StreamRead{Key: "k", From: 1, Wait: true, Fence: l.Fence})
			if err == nil && (b.Count != 2 || len(b.Items) != 1 || string(b.Items[0]) != "b") {
				err = fmt.Errorf("woken with %+v, want item 1", b)
			}
			done <- err
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.lis.waiters() < readers || !s.lis.up.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("%d readers waiting after 5s, want %d", s.lis.waiters(), readers)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // past their reads
	if n := pool.Stat().AcquiredConns(); n != 0 {
		t.Errorf("%d pool connections held by %d sleeping readers, want 0", n, readers)
	}
	start := time.Now()
	if err := s.AppendItem(ctx, l, 1, []byte("b")); err != nil {
		t.Fatal(err)
	}
	for range readers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("readers woke %v after the append, want well within the 1m poll interval", d)
	}
}

// waiters is how many waiters l holds.
func (l *listener) waiters() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, set := range l.byHash {
		n += len(set)
	}
	return n
}

// TestStreamResentAppendsRace: appends of the same item by its owner at
// once (a request re-sent while the first is on its way) all succeed and
// record it once.
func TestStreamResentAppendsRace(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, poolWith(t, 8))
	l := streamRun(t, s, "k", 1)
	for seq, data := range []string{"a", "b", "c"} {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() { errs <- s.AppendItem(ctx, l, uint64(seq), []byte(data)) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("AppendItem(%d) at once with 7 others: %v", seq, err)
			}
		}
	}
	if diff := cmp.Diff([]string{"1/0=a", "1/1=b", "1/2=c"}, itemRows(t, s, "k")); diff != "" {
		t.Errorf("item rows (-want +got):\n%s", diff)
	}
}
