// Package redisstore is the Redis idemstore.Store: records shared by every
// process that talks to one Redis deployment (standalone, Sentinel or
// Cluster), leases judged by the Redis server's clock, fenced writes, and
// pub/sub wake-up for waiting duplicates.
//
// # Usage
//
//	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
//	store, err := redisstore.New(ctx, rdb, redisstore.WithKeyPrefix("billing:"))
//	if err != nil { ... } // Redis did not answer a PING within ctx: wraps idem.ErrStoreUnavailable
//	defer store.Close() // stops the store's subscriptions; rdb stays open
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
// lease, expiry, owner, fingerprint) followed by the result bytes, or, for
// a call in progress or released that recorded steps, by its steps (see
// Recovery points). A value
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
// # Pipelining
//
// Claims and fenced writes (complete, fail, release, heartbeat) from many
// goroutines are coalesced into pipelines: when none of the store's
// commands is in flight a command goes out at once on its caller's
// goroutine, as it would without pipelining; otherwise it joins a queue
// that a flusher goroutine sends as a single pipeline (split by node on a
// Cluster), and what arrives meanwhile makes up the next; two pipelines
// may be in flight at once, so a command need not wait for a whole round
// trip before it is sent. Each caller
// still returns by its own ctx, and a command whose ctx ended while it
// waited in the queue is not sent. WithPipelining(false) turns it off.
//
// # Recovery points
//
// The store implements idemstore.Stepper (idem.Step). A call's steps live in
// its record's value, after the header (record version 4): no second key,
// so the call and its steps share one Cluster slot, one Redis expiry, one
// DEL, and every script that reads the record sees them atomically.
// SaveStep is one script, compare-and-set on owner and fence like
// Complete, that appends the step to the in-progress record (SET KEEPTTL:
// the record's expiry does not move); a step already recorded keeps its
// first data; a record that would pass MaxRecordBytes (512 MiB, the
// largest string Redis holds) is refused with idem.ErrResultTooLarge. The
// claim script returns the steps in its own reply when it takes over an
// expired lease or claims a released record, and writes the new record
// without them when it makes it anew (no record, or one past its expiry);
// the SET NX GET of a fresh claim writes only where no record exists, so
// there is nothing to drop. A heartbeat, a release and ForceRelease keep
// the steps; a completion or failure writes its result in their place.
// SaveStep goes through the pipeline like the other fenced writes, and
// with WithReplicaAcks it is acknowledged like a completion: confirmed by
// its op id on the key's primary, WAITed for, and retried (written again
// on a promoted primary that lost it) until its ctx ends, so a recorded
// step is as durable as a recorded result. A step costs its record a
// rewrite of the whole value (heartbeats rewrite it too), so steps suit
// results of modest size.
//
// # Streams
//
// The store implements idemstore.Streamer (idem.Stream). A run's items are
// a Redis list at ItemsKey, in the record's hash slot, whose first element
// stamps the run (fence and owner) and counts its bytes; item seq is
// element seq+1, so a read from any offset is one LRANGE, in one script
// with the record it belongs to. AppendItem is one script, compare-and-set
// on owner and fence like Complete, that checks the item's position (a
// re-send of identical data is nil), the record's limit (the record and
// its items together, MaxRecordBytes), appends, sets the list's expiry
// to the record's and publishes. A claim that starts a new run changes the
// fence, which hides the old run's items at once; the new run's first
// append deletes them (the claim cannot, in a Cluster: see stream.go), and
// a release by the lease that appended them deletes them at once. The
// fenced writes keep the list's expiry equal to the record's and Delete
// removes it. A waiting ReadStream listens on the
// record's channel and the items channel (ItemsKey + ":new") through the
// store's subscriptions, as Wait does.
//
// # Ordering and administration
//
// The store implements idemstore.Orderer: a claim that carries an OrderClaim
// reads and advances the entity's order record ("o1:<µs>", kept for
// max(lease, ttl)) in the same script, only when the claim would execute.
// It also implements idemstore.Admin: List scans the store's keys (on every
// master of a Cluster), ForceRelease releases a key and bumps its fence,
// and Cleanup has normally nothing to do because Redis expires records
// itself.
//
// # Waiting
//
// Store.Wait subscribes the key's channel, shared by all the store's
// waiters of that key; the scripts publish on it when the key leaves
// in_progress. Over a *redis.Client (standalone, Sentinel) the scripts
// PUBLISH and all waiters share one SUBSCRIBE connection. Over a
// *redis.ClusterClient the scripts SPUBLISH and the store SSUBSCRIBEs
// (sharded pub/sub, Redis 7.0): a notification stays on the shard that
// owns the key instead of being forwarded to every node. A sharded
// subscription names channels of one slot, so the store keeps one
// subscription connection per slot that has waiters, closed with its last
// waiter: as many connections as slots with a live wait, at most.
//
// When a key's slot moves (resharding) the old owner drops its shard
// subscribers with an unrequested SUNSUBSCRIBE; when a master dies its
// connection fails. Either way the store reloads the slot map, subscribes
// the slot's channels again on the new owner (retrying with backoff while
// the map is stale) and wakes the slot's waiters, which re-read the
// record: a completion published while they were not subscribed is read,
// not missed. Waiters also re-read the record at the owner's lease expiry
// (no message announces that) and at least every poll interval
// (WithPollInterval, default 500ms), so a lost message delays a waiter but
// never hangs it. Close the store to stop the subscription goroutines.
//
// # Cluster
//
// The record key is the prefix followed by the store key in a hash tag,
// "<prefix>{<key>}", and its channel is "<prefix>{<key>}:done", so both
// map to one slot. Keys of ordered functions already carry the entity's
// tag ("…:{<entity>}:…"); they are stored as "<prefix>=<key>" so that a
// call and its entity's order record (read and advanced by the same claim
// script) share a slot. Every other script touches a single key. A
// notification channel has its record key's tag, so the scripts' SPUBLISH
// stays in their key's slot, as a Cluster requires (see Waiting). The
// prefix may not contain braces. A call's steps are inside its record's
// value, so they are in its slot too.
//
// While a slot migrates (resharding: CLUSTER SETSLOT MIGRATING/IMPORTING
// and MIGRATE, as redis-cli --cluster reshard or rebalance does it) every
// command of the store names one record key, which the source serves
// while it holds the key and the target (ASK, which go-redis follows)
// once it has moved; a claim, a heartbeat, a completion, a step record or
// a wait's read therefore lands on whichever node holds the record. An
// ordered claim names two keys (the call's and its entity's order
// record), and Redis refuses such a command with TRYAGAIN while the node
// it reaches does not hold both, that is for most of the migration;
// go-redis tries it again only MaxRedirects times, within tens of
// milliseconds, and a pipelined command not at all, and a command whose
// redirect budget ran out returns the MOVED or ASK it got last. The
// store tries a command refused in any of these ways again (the server
// did not run it) for up to 10s, never past the call's ctx, and then
// fails it with idem.ErrStoreUnavailable. It sends ordered claims alone,
// outside its pipeline: when the first command go-redis's Cluster
// pipeline sent to a node gets TRYAGAIN, go-redis sends every command of
// that node again, also those it has already queued for an ASK target,
// and one command then runs on two nodes at once. Notifications published on
// the target while the slot's shard subscriptions are still on the
// source are lost; waiters read the record at their poll interval (see
// Waiting). test/reliability's resharding rows run duplicate storms
// through slot migrations and a rebalance that adds a master.
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
// always) and before replicas have it. A crash right after a claim or
// completion can lose it, and the key then runs again; for a failover see
// below. Where a restart of every node at once matters use AOF with
// appendfsync always, or a durable store (runtime/pgstore).
//
// # Failover: WithReplicaAcks and WithClockFences
//
// Redis replicates asynchronously. Without options, a write the primary
// acknowledged is lost when the primary dies before a replica has it and
// that replica is promoted (Sentinel, or a Cluster replica): a lost claim
// lets a second caller claim the key while the first runs, a lost
// completion makes the function run again, and a lost claim's fence is
// handed out again by the promoted replica. Test/reliability's failover
// rows count these.
//
// WithReplicaAcks(n, timeout) makes a claim that acquires or takes over a
// key, and every heartbeat, completion, failure and release, count only
// once n replicas have it. After the write, the store runs a small script
// on the key's primary that checks the key still holds the record that
// write produced (its op id and owner) and re-propagates it, and then
// WAIT n timeout on the same connection (one pipeline, one extra round
// trip; in a Cluster on the master that owns the key's slot). WAIT counts
// the replicas that have the connection's latest write, which is now that
// record, whoever's connection wrote it and whichever node was primary
// then. Without n acknowledgements the call fails with an error matching
// ErrNotReplicated and idem.ErrStoreUnavailable:
//
//   - a claim is not held: the store releases it (so does the Guard's
//     orphan search), or it expires with its lease; the Guard does not run
//     the function (fail closed; a Guard built to fail open runs it
//     unguarded, as for any store error);
//   - a heartbeat does not extend the lease: the Guard keeps counting the
//     lease from the last acknowledged one and stops the function when it
//     ends;
//   - a completion or failure is retried until the write's ctx ends (the
//     Guard gives it the lease, at least 5s): asked again, and written
//     again with the same op id when a newly promoted primary still has
//     the claim but not the write; if that does not succeed the Guard
//     returns the function's result with an error saying it was not
//     recorded, and the key runs again once the claim's lease ends;
//   - a release that fails leaves the key to expire with its lease.
//
// Replays, reads and Wait are not waited on: a replay may return a
// completion that the primary has and no replica yet; the completion's
// owner is then still waiting for its acknowledgement and writes the same
// result again on a promoted replica that lost it.
//
// What WAIT does not guarantee: it is not consensus. It says that n
// replicas had the write when it answered, not that the replica promoted
// next is one of them (ask for every replica, or rely on Sentinel and
// Cluster promoting the most up-to-date replica); a timed-out WAIT does
// not undo the write, which may still reach replicas later (so an
// unacknowledged claim is released, never assumed absent); and replicas
// hold the write in memory, so a restart of all of them together loses
// it (WAITAOF, Redis 7.2, also waits for AOF fsync; this store does not
// use it). Acknowledgements cost a round trip and the replication delay
// on every first execution (docs/BENCHMARKS.md); a replay costs nothing
// more.
//
// WithClockFences makes a claim's fence max(previous fence + 1, the
// server's time in µs) instead of previous fence + 1. Fences stay
// strictly increasing for a key as before, and across a failover too,
// even when the last increments were lost with the old primary: a lost
// fence is at most the old primary's clock when it was issued, and the
// promoted replica claims later by its own clock. This assumes the
// servers' clocks agree to better than the time a failover takes
// (Sentinel's down-after-milliseconds, the Cluster's node timeout, both
// seconds), which leases already assume: a lease placed by the old
// primary's clock is judged by the promoted replica's. Epochs that Redis
// keeps (Sentinel's failover epoch lives in the Sentinels, not in the
// server; a Cluster's config epoch only in Cluster mode) would not serve
// every deployment, and a replication id is not ordered. The price: every
// claim runs the claim script (no SET NX fast path), so a first execution
// and a replay cost the server a script instead of a SET. Without acks a
// lost claim's fence is not reused, but its owner may still run beside
// the next one; with acks the fence of a claim that was lost was never
// run under. A fence is about 2^50 (µs since 1970), so downstream systems
// must store fences as 64-bit integers.
//
// # Failover: the failure model
//
// With WithReplicaAcks(n, timeout) and WithClockFences, a key executes at
// most once (and fences only grow) across failovers under this model:
//
//   - every promotion promotes a replica that holds every write that n
//     replicas acknowledged: one in sync with the primary it replaces.
//     With n equal to the number of replicas of each primary that is any
//     in-sync replica; with fewer, Sentinel's and the Cluster's preference
//     for the most advanced replica has to pick one that acknowledged;
//   - so failovers come one at a time, and a node that comes back without
//     the current data (restarted, it has nothing or only the RDB of its
//     last full sync, which a replica writes to disk even with saving off;
//     or it is resyncing after a failover) is not promotable until its
//     resync is done: its master_link_status is up and its offset has
//     caught up with its primary's. Successive failovers are no faster
//     than a full resync;
//   - the servers' clocks agree to better than the time a failover takes.
//
// Outside it, the store cannot keep the promise, nor see that it broke: a
// promotion of a replica that lacks acknowledged writes (one still in its
// first full sync holds nothing, or an old data set) loses them, the old
// primary then resyncs from the new one and drops its own copy, and a lost
// record looks exactly like a key never claimed, so the key runs again.
//
// Redis does not keep a replica in its first sync out of a failover by
// itself. Such a replica reports master_link_down_since_seconds:-1, which
// Sentinel (7.0) reads as a link down for no time at all: it is a candidate
// from the moment it starts. And with down-after-milliseconds 1000, equal
// to the Sentinels' one-second ping period, a Sentinel that has just
// switched to a new primary may call it down before its first PING is
// answered, one second after the switch, and with a quorum fail it over
// without being asked onto whatever replica it lists; docs/RELIABILITY.md
// measures that. Deployment settings that keep a deployment inside the model:
//
//   - start a replica that comes back without the current data with
//     replica-priority 0 (Sentinel) or cluster-replica-no-failover yes
//     (Cluster), and lift it (CONFIG SET replica-priority 100, or
//     cluster-replica-no-failover no) once INFO replication shows
//     master_link_status:up, master_sync_in_progress:0 and a
//     slave_repl_offset caught up with the primary's master_repl_offset;
//     with Sentinel, take its primary down only once every Sentinel lists
//     it with its new priority (SENTINEL REPLICAS), which takes up to ten
//     seconds. A Sentinel takes a replica it has not yet sent INFO for
//     (one it has just listed after a switch) for promotable whatever its
//     replica-priority, so the hold needs the next setting too;
//   - with Sentinel, a down-after-milliseconds of several seconds, well
//     above the one-second ping period and any pause of a loaded primary
//     (the default is 30s; the reliability rows inside the model use 5s,
//     the rows beyond it 1s); with a Cluster, a non-zero
//     cluster-replica-validity-factor (default 10) for automatic
//     failovers, so that a replica whose link has been down longer than
//     that allows does not fail over on its own;
//   - optionally min-replicas-to-write 1 and min-replicas-max-lag: a
//     primary with no replica in sync then refuses writes at once instead
//     of leaving each claim to WAIT's timeout. It does not change the
//     guarantee (WAIT already counts only replicas whose link is up and
//     whose acknowledged offset covers the write).
package redisstore
