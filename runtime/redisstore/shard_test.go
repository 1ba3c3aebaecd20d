package redisstore

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TestKeySlot: the hub groups channels by the slot the server computes.
func TestKeySlot(t *testing.T) {
	rdb := cluster(t)
	ctx := context.Background()
	for _, key := range []string{"", "a", "foo", "{user1000}.following", "p{}x", "p{a}{b}", "x{y", "idemtest:ab:{k}:done", "=t:{e}:x:done", "\xff\x00"} {
		want, err := rdb.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := keySlot(key); int64(got) != want {
			t.Errorf("keySlot(%q) = %d, CLUSTER KEYSLOT says %d", key, got, want)
		}
	}
}

// randomKey is a key name no other test uses, so its slot holds nothing
// else of ours.
func randomKey(t *testing.T) string {
	return "shard-" + testenv.RandName()
}

// shardSubscribers is PUBSUB SHARDNUMSUB channel on the node at addr.
func shardSubscribers(t *testing.T, addr, channel string) int64 {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	m, err := c.PubSubShardNumSub(context.Background(), channel).Result()
	if err != nil {
		t.Fatal(err)
	}
	return m[channel]
}

// claimAndWait claims key in s and starts a waiter on it, returning the
// lease and the waiter's result.
func claimAndWait(t *testing.T, s *Store, key string) (idemstore.Lease, <-chan waitResult) {
	t.Helper()
	ctx := context.Background()
	res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{1}, Lease: time.Minute, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	done := waitFor(s, key, 30*time.Second)
	waitListening(s, key)
	return idemstore.Lease{Key: key, Owner: idemstore.Token{1}, Fence: res.Fence, Duration: time.Minute, TTL: time.Minute}, done
}

// completeWithin completes l and requires the waiter to return within d
// (far below the store's poll interval, so only a notification can wake it).
func completeWithin(t *testing.T, s *Store, l idemstore.Lease, done <-chan waitResult, d time.Duration) {
	t.Helper()
	select {
	case r := <-done:
		t.Fatalf("Wait returned before the owner finished: %v", r.err)
	default:
	}
	start := time.Now()
	if err := s.Complete(context.Background(), l, idemstore.Result{Data: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("Wait = %v", r.err)
		}
	case <-time.After(d):
		t.Fatalf("the waiter was not woken within %v of the completion", d)
	}
	t.Logf("waiter woken %v after the completion", time.Since(start))
}

// waitedKey is a store that waits on notifications alone (its poll
// interval is never reached), a fresh key, the key's channel and the
// master that owns it.
func waitedKey(t *testing.T, rdb *redis.ClusterClient) (*Store, string, string, *redis.Client) {
	t.Helper()
	s := newStore(t, rdb, WithPollInterval(time.Hour))
	key := randomKey(t)
	ch := channelOf(s.RecordKey(key))
	owner, err := rdb.MasterForKey(context.Background(), ch)
	if err != nil {
		t.Fatal(err)
	}
	return s, key, ch, owner
}

// TestShardWakeupStaysOnShard: on a Cluster a completion wakes its waiter
// through the shard subscription of the node that owns the key, and a
// classic SUBSCRIBE of the same channel (on that node or another) hears
// nothing: the notification never crossed the cluster bus.
func TestShardWakeupStaysOnShard(t *testing.T) {
	rdb := cluster(t)
	ctx := context.Background()
	s, key, ch, owner := waitedKey(t, rdb)
	var classic []*redis.PubSub
	for _, addr := range rdb.Options().Addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { c.Close() })
		ps := c.Subscribe(ctx, ch)
		t.Cleanup(func() { ps.Close() })
		if _, err := ps.ReceiveTimeout(ctx, 2*time.Second); err != nil { // the confirmation
			t.Fatal(err)
		}
		classic = append(classic, ps)
	}
	l, done := claimAndWait(t, s, key)
	if n := shardSubscribers(t, owner.Options().Addr, ch); n != 1 {
		t.Fatalf("PUBSUB SHARDNUMSUB on the key's owner %s = %d, want 1", owner.Options().Addr, n)
	}
	completeWithin(t, s, l, done, time.Second)
	for i, ps := range classic {
		msg, err := ps.ReceiveTimeout(ctx, 200*time.Millisecond)
		var ne net.Error
		if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("classic subscriber on %s got %v (error %v), want nothing", rdb.Options().Addrs[i], msg, err)
		}
	}
}

// TestShardWaitAcrossSlotMigration: a waiter whose key's slot moves to
// another master (CLUSTER SETSLOT MIGRATING/IMPORTING, MIGRATE, SETSLOT
// NODE) is subscribed again on the new owner and woken there by the
// completion, well inside a poll interval it never reaches. The slot is
// moved back at the end.
func TestShardWaitAcrossSlotMigration(t *testing.T) {
	rdb := cluster(t)
	s, key, ch, from := waitedKey(t, rdb)
	slot := keySlot(ch)
	nodes := clusterMasters(t, rdb)
	src := nodes[from.Options().Addr]
	var dst *master
	for _, n := range nodes {
		if n != src {
			dst = n
			break
		}
	}
	l, done := claimAndWait(t, s, key)

	moveSlot(t, nodes, slot, src, dst)
	t.Cleanup(func() { moveSlot(t, nodes, slot, dst, src) })

	// The old owner dropped the shard subscription; the hub re-subscribes
	// on the new one.
	deadline := time.Now().Add(10 * time.Second)
	for shardSubscribers(t, dst.addr, ch) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("no shard subscription of %s on the slot's new owner %s after the migration", ch, dst.addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := shardSubscribers(t, src.addr, ch); n != 0 {
		t.Fatalf("the old owner %s still has %d shard subscribers of %s", src.addr, n, ch)
	}
	// The re-subscription woke the waiter, which re-read the record,
	// still in progress: it must still be waiting.
	time.Sleep(100 * time.Millisecond)
	completeWithin(t, s, l, done, time.Second)
}

type master struct {
	addr, id string
	c        *redis.Client
}

// clusterMasters returns the Cluster's masters by address.
func clusterMasters(t *testing.T, rdb *redis.ClusterClient) map[string]*master {
	t.Helper()
	ctx := context.Background()
	out := map[string]*master{}
	for _, addr := range rdb.Options().Addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { c.Close() })
		id, err := c.ClusterMyID(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[addr] = &master{addr: addr, id: id, c: c}
	}
	return out
}

// moveSlot migrates slot and its keys from src to dst, the way
// redis-cli --cluster reshard does, and tells every master.
func moveSlot(t *testing.T, nodes map[string]*master, slot int, src, dst *master) {
	t.Helper()
	openSlotMigration(t, slot, src, dst)
	migrateSlotKeys(t, slot, src, dst, nil)
	closeSlotMigration(t, nodes, slot, dst)
}

// openSlotMigration puts slot in migration from src to dst: IMPORTING on
// dst, MIGRATING on src. Until closeSlotMigration the slot's keys are
// split between the two as migrateSlotKeys moves them.
func openSlotMigration(t *testing.T, slot int, src, dst *master) {
	t.Helper()
	ctx := context.Background()
	for _, err := range []error{
		dst.c.Do(ctx, "cluster", "setslot", slot, "importing", src.id).Err(),
		src.c.Do(ctx, "cluster", "setslot", slot, "migrating", dst.id).Err(),
	} {
		if err != nil {
			t.Fatalf("opening the migration of slot %d from %s to %s: %v", slot, src.addr, dst.addr, err)
		}
	}
}

// migrateSlotKeys MIGRATEs keys (all of the slot's keys on src when nil)
// from src to dst.
func migrateSlotKeys(t *testing.T, slot int, src, dst *master, keys []string) {
	t.Helper()
	ctx := context.Background()
	host, port, err := net.SplitHostPort(dst.addr)
	if err != nil {
		t.Fatal(err)
	}
	for all := keys == nil; ; {
		if all {
			if keys, err = src.c.ClusterGetKeysInSlot(ctx, slot, 100).Result(); err != nil {
				t.Fatalf("keys of slot %d on %s: %v", slot, src.addr, err)
			}
		}
		if len(keys) == 0 {
			return
		}
		args := []any{"migrate", host, port, "", 0, 5000, "keys"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := src.c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("migrating %d keys of slot %d from %s to %s: %v", len(keys), slot, src.addr, dst.addr, err)
		}
		if !all {
			return
		}
	}
}

// closeSlotMigration gives slot to dst on every master (dst first, then
// the others, as redis-cli --cluster reshard does).
func closeSlotMigration(t *testing.T, nodes map[string]*master, slot int, dst *master) {
	t.Helper()
	ctx := context.Background()
	if err := dst.c.Do(ctx, "cluster", "setslot", slot, "node", dst.id).Err(); err != nil {
		t.Fatalf("giving slot %d to %s: %v", slot, dst.addr, err)
	}
	for _, n := range nodes {
		if n != dst {
			if err := n.c.Do(ctx, "cluster", "setslot", slot, "node", dst.id).Err(); err != nil {
				t.Fatalf("telling %s slot %d is %s's: %v", n.addr, slot, dst.addr, err)
			}
		}
	}
}

// TestShardWaitAcrossFailover: the master that owns a waited-on key is
// killed (SIGKILL) and its replica promoted (CLUSTER FAILOVER FORCE); the
// hub's shard subscription fails with it, is made again on the promoted
// replica, and the completion there wakes the waiter inside a poll
// interval it never reaches. The killed master comes back as a replica.
func TestShardWaitAcrossFailover(t *testing.T) {
	failoverMu.Lock()
	defer failoverMu.Unlock()
	rdb := failoverCluster(t)
	ctx := context.Background()
	s, key, ch, owner := waitedKey(t, rdb)
	m := owner.Options().Addr
	replica := clusterReplicaOf(t, ctx, m)
	mPid, err := serverPid(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	l, done := claimAndWait(t, s, key)
	rc := redis.NewClient(&redis.Options{Addr: replica, DialTimeout: time.Second})
	defer rc.Close()
	// The claim must reach the replica before the kill (read there in
	// READONLY): this test is about the wake-up, not a lost claim.
	if err := rc.Do(ctx, "readonly").Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n, err := rc.Exists(ctx, s.RecordKey(key)).Result()
		if err == nil && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the claim did not reach %s, the replica of %s: %d, %v", replica, m, n, err)
		}
	}

	t.Cleanup(func() {
		if err := failoverScript("start", "cluster"); err != nil {
			t.Errorf("bringing %s back as a replica: %v", m, err)
		}
	})
	if err := syscall.Kill(mPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	forceFailover(ctx, t, rc, replica)
	t.Logf("%s promoted %v after %s was killed", replica, time.Since(start), m)
	deadline := time.Now().Add(30 * time.Second)
	for shardSubscribers(t, replica, ch) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("no shard subscription of %s on the promoted replica %s", ch, replica)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("shard subscription on %s %v after the kill", replica, time.Since(start))
	completeWithin(t, s, l, done, 2*time.Second)
}
