package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

// onBoth runs run as a subtest on the standalone server and on the
// Cluster, each with a store of its own made with opts.
func onBoth(t *testing.T, run func(t *testing.T, rdb redis.UniversalClient, s *Store), opts ...Option) {
	for name, rdb := range map[string]redis.UniversalClient{"standalone": standalone(t), "cluster": cluster(t)} {
		t.Run(name, func(t *testing.T) { run(t, rdb, newStore(t, rdb, opts...)) })
	}
}

// claimFor claims key for owner and returns its lease.
func claimFor(t *testing.T, s *Store, key string, owner byte, lease time.Duration) idemstore.Lease {
	t.Helper()
	l := idemstore.Lease{Key: key, Owner: idemstore.Token{owner}, Duration: lease, TTL: time.Hour}
	res, err := s.Claim(context.Background(), idemstore.ClaimRequest{Key: key, Owner: l.Owner, Lease: lease, TTL: l.TTL})
	if err != nil || (res.Status != idemstore.ClaimAcquired && res.Status != idemstore.ClaimTakenOver) {
		t.Fatalf("claim %s = %v, %v; want it acquired", key, res.Status, err)
	}
	l.Fence = res.Fence
	return l
}

// TestItemTooLarge: items count against the record's limit with the
// record itself (99 bytes) and 4 bytes each besides their data.
func TestItemTooLarge(t *testing.T) {
	s := newStore(t, standalone(t))
	s.maxRecord = 1000
	idemtest.CheckItemTooLarge(t, s, "big", idemstore.Token{1}, "1107 bytes")
}

// TestItemsExpireWithTheirRecord: every append and every write of the
// record gives the items list the record's own expiry, so the two keys
// go together, whichever write moved the record's.
func TestItemsExpireWithTheirRecord(t *testing.T) {
	onBoth(t, func(t *testing.T, rdb redis.UniversalClient, s *Store) {
		ctx := context.Background()
		l := claimFor(t, s, "ttl", 1, time.Minute)
		rk, ik := s.RecordKey(l.Key), s.ItemsKey(l.Key)
		same := func(after string) {
			t.Helper()
			r, err1 := rdb.PExpireTime(ctx, rk).Result()
			i, err2 := rdb.PExpireTime(ctx, ik).Result()
			if err := errors.Join(err1, err2); err != nil || r != i || r <= 0 {
				t.Fatalf("after %s: record expires at %v, items at %v (%v); want the same time", after, r, i, err)
			}
		}
		steps := []struct {
			name string
			do   func() error
		}{
			{"the first append", func() error { return s.AppendItem(ctx, l, 0, []byte("a")) }},
			{"a heartbeat", func() error { l.Duration = 2 * time.Minute; return s.Heartbeat(ctx, l) }},
			{"the next append", func() error { return s.AppendItem(ctx, l, 1, []byte("b")) }},
			{"the completion", func() error { l.TTL = time.Minute; return s.Complete(ctx, l, idemstore.Result{Data: []byte("end")}) }},
		}
		for _, st := range steps {
			if err := st.do(); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			same(st.name)
		}
		if err := s.Delete(ctx, l.Key); err != nil {
			t.Fatal(err)
		}
		if n, err := rdb.Exists(ctx, rk, ik).Result(); err != nil || n != 0 {
			t.Fatalf("after Delete %d of the record and its items exist (%v), want 0", n, err)
		}
	})
}

// TestItemsOfAnOldRunAreDropped: a takeover hides the old run's items at
// once (the claim does not touch them) and the new run's first append
// deletes them, so the list holds its header and the new run's items
// only.
func TestItemsOfAnOldRunAreDropped(t *testing.T) {
	onBoth(t, func(t *testing.T, rdb redis.UniversalClient, s *Store) {
		ctx := context.Background()
		l := claimFor(t, s, "run", 1, 50*time.Millisecond)
		for i, it := range []string{"a", "b", "c"} {
			if err := s.AppendItem(ctx, l, uint64(i), []byte(it)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(60 * time.Millisecond)
		l2 := claimFor(t, s, "run", 2, time.Minute)
		b, err := s.ReadStream(ctx, idemstore.StreamRead{Key: l.Key})
		if err != nil || b.Count != 0 || len(b.Items) != 0 || b.Fence != l2.Fence {
			t.Fatalf("ReadStream after the takeover = %+v, %v; want no items under fence %d", b, err, l2.Fence)
		}
		if err := s.AppendItem(ctx, l2, 0, []byte("new")); err != nil {
			t.Fatal(err)
		}
		got, err := rdb.LRange(ctx, s.ItemsKey(l.Key), 1, -1).Result()
		if diff := cmp.Diff([]string{"new"}, got); diff != "" || err != nil {
			t.Fatalf("the items list after the new run's first append (-want +got):\n%s%v", diff, err)
		}
	})
}

// TestStreamReadersWokenByNotification: with a poll interval far longer
// than the test, a waiting reader returns promptly after an append, a
// completion, a release and a takeover, so it was told by a notification,
// not by a poll.
func TestStreamReadersWokenByNotification(t *testing.T) {
	onBoth(t, func(t *testing.T, rdb redis.UniversalClient, s *Store) {
		ctx := context.Background()
		for _, c := range []struct {
			name string
			do   func(l idemstore.Lease) error
			want idemstore.State
		}{
			{"append", func(l idemstore.Lease) error { return s.AppendItem(ctx, l, 0, []byte("a")) }, idemstore.StateInProgress},
			{"completion", func(l idemstore.Lease) error { return s.Complete(ctx, l, idemstore.Result{}) }, idemstore.StateCompleted},
			{"release", func(l idemstore.Lease) error { return s.Release(ctx, l) }, idemstore.StateReleased},
			{"forced release", func(l idemstore.Lease) error { _, err := s.ForceRelease(ctx, l.Key); return err }, idemstore.StateReleased},
		} {
			l := claimFor(t, s, "wake:"+c.name, 1, time.Minute)
			done := make(chan idemstore.StreamBatch, 1)
			go func() {
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				b, _ := s.ReadStream(rctx, idemstore.StreamRead{Key: l.Key, Wait: true, Fence: l.Fence})
				done <- b
			}()
			time.Sleep(100 * time.Millisecond)
			if err := c.do(l); err != nil {
				t.Fatal(err)
			}
			select {
			case b := <-done:
				if b.State != c.want {
					t.Errorf("the reader woken by the %s got state %v, want %v", c.name, b.State, c.want)
				}
			case <-time.After(3 * time.Second):
				t.Fatalf("a waiting reader was not woken within 3s of the %s", c.name)
			}
		}
	}, WithPollInterval(time.Minute))
}

// TestItemsWithReplicaAcks: on the Cluster with replicas, an append and
// its re-send with identical data both return once a replica confirmed
// the item (the append marks the record with its op id for the
// confirmation), and the items read back in order.
func TestItemsWithReplicaAcks(t *testing.T) {
	rdb := failoverCluster(t)
	s := newStore(t, rdb, WithReplicaAcks(1, time.Second), WithClockFences())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // an unconfirmed append retries until then
	defer cancel()
	l := claimFor(t, s, "acked", 1, 5*time.Second)
	for _, c := range []struct {
		seq  uint64
		data string
	}{{0, "a"}, {0, "a"}, {1, "b"}} {
		if err := s.AppendItem(ctx, l, c.seq, []byte(c.data)); err != nil {
			t.Fatalf("AppendItem(%d, %q): %v", c.seq, c.data, err)
		}
	}
	if err := s.Complete(ctx, l, idemstore.Result{Data: []byte("end")}); err != nil {
		t.Fatal(err)
	}
	b, err := s.ReadStream(ctx, idemstore.StreamRead{Key: l.Key})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, it := range b.Items {
		got = append(got, string(it))
	}
	if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" || b.State != idemstore.StateCompleted {
		t.Fatalf("the acknowledged stream in state %v (-want +got):\n%s", b.State, diff)
	}
}

// TestListSkipsItems: the admin listing sees a streamed call's record
// once and its items list not at all (an items key is no record key).
func TestListSkipsItems(t *testing.T) {
	onBoth(t, func(t *testing.T, rdb redis.UniversalClient, s *Store) {
		ctx := context.Background()
		l := claimFor(t, s, "listed", 1, time.Minute)
		if err := s.AppendItem(ctx, l, 0, []byte("a")); err != nil {
			t.Fatal(err)
		}
		var keys []string
		err := s.List(ctx, "", func(r idemstore.Record) error { keys = append(keys, r.Key); return nil })
		if diff := cmp.Diff([]string{"listed"}, keys); diff != "" || err != nil {
			t.Fatalf("List of a streamed call (-want +got):\n%s%v", diff, err)
		}
		if n, err := s.Cleanup(ctx); n != 0 || err != nil {
			t.Fatalf("Cleanup = %d, %v; want 0, nil", n, err)
		}
	})
}

// TestItemsOfAReleasedRunAreDropped: the release by the lease that
// appended the items deletes them, so the claim after it finds none.
func TestItemsOfAReleasedRunAreDropped(t *testing.T) {
	onBoth(t, func(t *testing.T, rdb redis.UniversalClient, s *Store) {
		ctx := context.Background()
		l := claimFor(t, s, "released", 1, time.Minute)
		for i, it := range []string{"a", "b"} {
			if err := s.AppendItem(ctx, l, uint64(i), []byte(it)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
		if n, err := rdb.Exists(ctx, s.ItemsKey(l.Key)).Result(); err != nil || n != 0 {
			t.Fatalf("the items key after the release: %d (%v), want none", n, err)
		}
		b, err := s.ReadStream(ctx, idemstore.StreamRead{Key: l.Key})
		if err != nil || b.State != idemstore.StateReleased || b.Count != 0 {
			t.Fatalf("ReadStream after the release = %+v, %v; want released with no items", b, err)
		}
	})
}
