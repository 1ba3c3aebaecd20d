// Package reliability is idemgen's reliability harness: it drives the
// generated wrappers of package work from several real OS processes
// against the Redis, Postgres, file, DynamoDB (dynalite) and Firestore
// (emulator) stores and checks the results
// against a side-effect ledger kept in Postgres (one row per execution,
// written by the guarded function itself).
//
// Scenarios (reliability_test.go):
//
//   - storm: many processes × goroutines deliver every key many times in
//     random order; exactly one execution per key, every caller the same
//     result.
//   - crash: a worker is SIGKILLed at a random moment (before its claim,
//     while the function runs, between the function's return and the
//     completion); a fresh process retries: no key stays stuck beyond its
//     lease, every key completes, at most one execution per fence.
//   - zombie: an owner is SIGSTOPped past its lease, another process takes
//     over and completes, the owner is SIGCONTed: its completion fails with
//     idem.ErrLeaseLost, the stored result is the successor's, and its
//     fence-guarded business write is rejected.
//   - recovery points (steps_test.go): a worker runs a three-step function
//     (idem.Step, each step writing its own ledger row) and is SIGKILLed
//     at a random moment, right after a step was recorded, or inside a
//     step; the harness reads which steps each record holds, and a fresh
//     process retries every key: a step the record held never runs again,
//     and only the step in flight at the kill may, once.
//   - streams (Redis, Postgres, file; streams_test.go; the memory store in one
//     process, its processes Guards whose store handles die,
//     memstreams_test.go): a streamed function
//     (idem.Stream) is read by many readers in several processes that
//     attach at random moments and drop and resume from their cursor now
//     and then, while the harness SIGKILLs the process that produces;
//     every reader that finishes read exactly one run's items, in order,
//     with no gap and no repeat (a restart is told, never spliced), and
//     the same run as a fresh reader after the end.
//   - network (Redis, Postgres, DynamoDB, Firestore): the store is reached through FaultProxy,
//     which injects resets, blackholes and latency spikes: callers get typed
//     errors, a key is completed once, stale fences never write, and every
//     key completes once the faults heal.
//   - skew (Redis, Postgres, Firestore): workers run with Guard clocks
//     offset by minutes (idem.WithClock); exclusivity holds because
//     leases are judged by the server's clock. DynamoDB judges leases by
//     the callers' clocks: its row skews Guard and store clocks within
//     its stated margin, and TestHarnessDetectsSkewBeyondMargin shows
//     clocks skewed past it break exclusivity (docstores_test.go).
//   - failover storm (Redis Sentinel and Cluster with replicas,
//     failover_test.go): a storm during which the primary is SIGKILLed
//     after its replica was cut off for a moment, and the replica promoted
//     (Sentinel failover, CLUSTER FAILOVER FORCE), several times per run.
//     Without redisstore.WithReplicaAcks the lost writes show as
//     violations (counted and listed, as the self-test's); with it and
//     WithClockFences, inside the failure model runtime/redisstore states
//     (a killed node comes back not promotable until its resync is done),
//     there must be none. A Sentinel row with acks beyond that model (the
//     node promotable at once, before its resync) shows violations, as
//     intended. The short version runs only the Sentinel with-acks row,
//     small. The deployments are scripts/redis-failover.sh's, which the
//     test starts.
//   - resharding storm (Redis Cluster, reshard_test.go): a duplicate storm
//     of waiting, heartbeating and three-step calls while the slots that
//     hold its keys migrate between masters (SETSLOT MIGRATING/IMPORTING,
//     MIGRATE in small batches, SETSLOT NODE), and while a fourth master
//     joins and slots move to it; claims, heartbeats, completions, step
//     records and waits follow ASK, MOVED and TRYAGAIN: every key runs
//     once, every caller gets the same result, no call fails or hangs.
//     The Cluster is scripts/redis-reshard.sh's, which the test restarts
//     afresh and stops.
//
// `go test ./test/reliability` runs a short version (seconds);
// IDEM_RELIABILITY=full runs the full one and, with
// IDEM_RELIABILITY_REPORT=path, writes the Markdown report (make
// reliability writes docs/RELIABILITY.md). Workers are the test binary
// itself, re-executed with -test.run=^TestWorkerProcess$ and their
// configuration in the IDEM_REL_WORKER environment variable.
//
// BrokenStore is a deliberately wrong store wrapper; the harness's own test
// shows the zombie scenario catches it.
package reliability
