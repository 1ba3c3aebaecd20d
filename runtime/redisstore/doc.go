// Package redisstore is the Redis idem.Store: records shared by every
// process that talks to one Redis deployment (standalone, Sentinel or
// Cluster), leases judged by the Redis server's clock, fenced writes, and
// pub/sub wake-up for waiting duplicates.
//
// # Usage
//
//	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
//	store, err := redisstore.New(ctx, rdb, redisstore.WithPrefix("billing:"))
//	if err != nil { ... } // Redis did not answer a PING within ctx: wraps idem.ErrStoreUnavailable
//	defer store.Close() // stops the shared subscription; rdb stays open
//	g := idem.NewGuard(store)
//
// Any redis.UniversalClient works: a *redis.Client (also from
// redis.NewFailoverClient for Sentinel) or a *redis.ClusterClient.
//
// # How it works
//
// Every state transition is one atomic server operation and one round
// trip, judged by the clock of the server that holds the key, so leases do
// not depend on client clocks. A claim starts with one SET NX GET (Redis
// 7.0 or later): on a free key it writes a fresh in-progress record (fence
// 1) whose lease the server places with the key's own expiry (PX = lease +
// TTL); on a key that holds a finished record it changes nothing and
// returns it, which is the replay. Only what that cannot settle (a record
// in progress, released, or not a record) goes on to the claim script,
// which reads the time with TIME, takes over an expired lease, and
// reports. Heartbeat, complete, fail and release are Lua scripts that
// compare the owner token and fence. So a replay costs one round trip and
// the price of a plain SET on the server, a first execution two (SET,
// complete script); a duplicate that finds the key in progress costs two
// (SET, claim script). A released record keeps its fence so the next
// owner's fence is higher. Scripts run with EVALSHA; after a server
// restart (or SCRIPT FLUSH) the first call of each script costs one extra
// round trip to load it again.
//
// A record is one Redis string: a versioned binary header (state, fence,
// lease, expiry, owner, fingerprint) followed by the result bytes. A value
// at a record key that is not such a record (another application's key, a
// future encoding version) is reported as idem.ErrCorruptRecord and never
// overwritten; Store.Delete removes it.
//
// Records expire with Redis TTLs: a finished or released record after the
// lease's TTL, an in-progress one a TTL after its lease expiry (so a crashed
// owner's key is free to take over when the lease ends, and disappears
// later). While a record exists its fence only grows; once Redis has
// expired it, the next claim starts again at fence 1.
//
// go-redis retries a command whose connection failed. Each claim and
// script call carries an op id stored in the record, so a retried claim or
// write that already took effect answers as it did the first time instead
// of conflicting with itself.
//
// # Deadlines and ContextTimeoutEnabled
//
// Every store call returns by the time its ctx is done, with an error
// wrapping ctx's error (context.DeadlineExceeded, context.Canceled),
// whatever the client's settings. go-redis itself puts a ctx's deadline
// on its socket reads and writes only when the client is built with
// ContextTimeoutEnabled: true; by default it ignores the ctx for I/O and
// waits for its own ReadTimeout and WriteTimeout (3s each by default),
// then retries. So the store reads ContextTimeoutEnabled from a
// *redis.Client, *redis.ClusterClient or *redis.Ring (any other
// UniversalClient is assumed to ignore ctx) and, where the client would
// not honour the ctx, watches the call in a goroutine of its own and
// returns ctx's error when ctx is done first. What ContextTimeoutEnabled
// changes is therefore cost, not the bound: with it, a call whose ctx
// has a deadline runs on the caller's goroutine (go-redis closes the
// connection at the deadline); without it, such a call costs one
// goroutine (see docs/BENCHMARKS.md). A ctx that is never done
// (context.Background) costs nothing either way. A call given up at its
// ctx runs on in its goroutine until its reply or the client's timeout
// and then returns its connection to the pool (or go-redis closes it), so
// the pool never hands out a connection with a reply still pending; what
// it did on the server is unknown to the caller, as for any timeout.
// Pub/sub set-up for Wait ignores deadlines even with
// ContextTimeoutEnabled, so Wait's subscribe is always watched.
//
// # Ordering and administration
//
// The store implements idem.Orderer: a claim that carries an OrderClaim
// reads and advances the entity's order record ("o1:<µs>", kept for
// max(lease, ttl)) in the same script, only when the claim would execute.
// It also implements idem.Admin: List scans the store's keys (on every
// master of a Cluster), ForceRelease releases a key and bumps its fence,
// and Cleanup has normally nothing to do because Redis expires records
// itself.
//
// # Waiting
//
// Store.Wait subscribes the key's channel on one pub/sub connection shared
// by all the store's waiters; the scripts PUBLISH on it when the key
// leaves in_progress. Waiters also re-read the record at the owner's lease
// expiry (no message announces that) and at least every poll interval
// (WithPollInterval, default 500ms), so a lost message delays a waiter but
// never hangs it. Close the store to stop the subscription goroutine.
//
// # Cluster
//
// The record key is the prefix followed by the store key in a hash tag,
// "<prefix>{<key>}", and its channel is "<prefix>{<key>}:done", so both
// map to one slot. Keys of ordered functions already carry the entity's
// tag ("…:{<entity>}:…"); they are stored as "<prefix>=<key>" so that a
// call and its entity's order record (read and advanced by the same claim
// script) share a slot. Every other script touches a single key. Notifications use
// classic PUBLISH, which a Cluster forwards to every node, so the one
// subscription connection (to any node) hears all of them. The prefix may
// not contain braces.
//
// # Eviction: use maxmemory-policy noeviction
//
// An evicted record is a forgotten call: a duplicate would run again, and a
// new owner would start again at fence 1 while the old one may still be
// running. Every record key has a TTL, so the volatile-* policies
// (volatile-lru, volatile-lfu, volatile-random, volatile-ttl), which evict
// only keys with a TTL, evict these keys just as the allkeys-* policies
// do. The only safe setting is maxmemory-policy noeviction (writes then
// fail when memory is full, and the Guard fails closed with
// idem.ErrStoreUnavailable), or no maxmemory limit at all. If the same
// Redis holds cache data that must be evictable, give idempotency records
// their own Redis (or Cluster) with noeviction.
//
// At first use the store reads maxmemory-policy (on every master of a
// Cluster) and, when records can be evicted, logs a warning
// (EvictionWarn, the default) or refuses to work (EvictionRefuse); see
// WithEvictionCheck. Servers that disable CONFIG are logged, not refused.
//
// # Durability
//
// Redis acknowledges a write before it is on disk (unless appendfsync is
// always) and before replicas have it. A crash or failover right after a
// claim or completion can lose it, and the key then runs again. Where that
// matters use AOF with appendfsync always, or WAIT-based replication
// outside this store, or a durable store (runtime/pgstore).
package redisstore
