// Package firestorestore is an idemstore.Store on Google Cloud Firestore (native
// mode), for services on Google Cloud (Cloud Run, GKE, Functions) that want
// idempotent functions without running a database of their own. It
// replaces the usual Firestore lock with heartbeats and a stale-lock
// monitor: leases, fences, stored results, and stale claims listed by
// idemctl (firestore:// URLs) and counted by the metrics adapters.
//
// # Usage
//
// Configure the client as usual (project, credentials; the client honours
// FIRESTORE_EMULATOR_HOST) and hand it to New with a collection:
//
//	client, err := firestore.NewClient(ctx, "my-project")
//	store, err := firestorestore.New(ctx, client, "idempotency") // one read: fails if Firestore does not answer
//	g := idem.NewGuard(store)
//
// Each key is one document, its ID "k" followed by the key with bytes
// outside [A-Za-z0-9:._-] percent-encoded. The fields are short (storage
// is billed by name bytes too) and versioned:
//
//	v    integer    record format version (1); any other value, or a
//	                document without it, is idem.ErrCorruptRecord
//	st   integer    1 in progress, 2 completed, 3 failed, 4 released
//	ow   bytes      the owner token (16 bytes)
//	fe   integer    the ownership fence; +1 on every claim
//	fp   bytes      the payload fingerprint (32 bytes)
//	res  bytes      the encoded result or recorded error (absent if empty)
//	ld   integer    the lease, nanoseconds, from the last write
//	td   integer    the retention (TTL), nanoseconds
//	ca   timestamp  when the owner claimed the key (absent until the
//	                owner's first write after the claim: the claim's own
//	                update time is then the claim time)
//	ttl  timestamp  when Firestore's TTL policy may delete the document
//	sp   map        recovery points of an in-progress or released record:
//	                step name -> bytes, its encoded result (see Recovery
//	                points); absent when there are none
//
// A document that is not a record (a foreign writer's, a damaged one) is
// reported as idem.ErrCorruptRecord by Claim, Get and Wait, and never
// overwritten.
//
// # Clocks
//
// Leases and retention are judged by Firestore's clock, not the callers':
// a record's lease runs from the document's update time (the commit time
// of its last write) for ld, and its retention for td after that (after
// the lease while in progress). Claim and Get judge them at the read's
// server read time; a claim then writes with the update time it read as
// the precondition, so nothing that happened after the read is
// overwritten. Caller clocks therefore do not matter for exclusivity; only
// the ttl field, which tells Firestore's TTL sweeper when the document may
// go, is the writer's clock plus a margin (WithTTLMargin, default one
// hour), so a writer whose clock runs behind by less than the margin never
// has a live record deleted.
//
// # Round trips
//
// Firestore has no write that is conditional on a field's value and
// returns the document when the condition fails; it offers a create that
// fails if the document exists and an update preconditioned on the
// document's update time. So:
//
//   - Claim reads the document (one round trip: a replay, or a claim that
//     finds the key in progress) and, when the key may be claimed, creates
//     it or overwrites it under the read update time (a second). A first
//     execution costs three round trips (Get, Create, Complete).
//     WithCreateFirst tries the create first instead: a first execution
//     costs two (Create, Complete) and a replay two (Create, Get).
//   - Heartbeat, Complete, Fail and Release are one Update preconditioned
//     on the update time of this store's own last write to the lease, which
//     the store remembers (bounded): the document unchanged since then still
//     holds this owner, fence and state, so the write is fenced without a
//     read. When the store does not know that time (another process's
//     lease, a forgotten entry) or the precondition fails (the owner's own
//     concurrent heartbeat), it reads the document, checks owner, fence and
//     state, and writes under the read update time: a stale owner's write
//     is rejected with idem.ErrLeaseLost. A retried write whose first
//     attempt was applied (same owner, fence, state and data) succeeds.
//   - SaveStep is such a fenced Update too: one round trip when the store
//     made the lease's last write.
//
// # Recovery points
//
// The store implements idemstore.Stepper: a call's steps (idem.Step) live in
// the sp map field of its record's document, so they expire and are
// deleted with it. SaveStep sets sp.name with the fenced Update described
// under Round trips: a stale owner writes nothing and gets
// idem.ErrLeaseLost. A step the document already holds keeps its first
// data (judged on a read, which also shows the lease still holds). Like
// a heartbeat, the write restarts the lease, which runs from the
// document's update time. A claim over a retained record (an expired
// lease, a release, an operator's ForceRelease) keeps the map and returns
// it from the document the claim read, so resuming a call costs no extra
// round trip; a claim over a record past its retention deletes it, so a
// new call under a reused key never sees the old call's steps. Complete
// and Fail delete the map too (the result replays from then on, and gets
// the whole document); Release and Heartbeat keep it. Step names are the
// map's keys, but for names Firestore cannot take as field names or that
// could read as escaped: "", names of the form __x__ and names starting
// with "~" are stored as "~" and the name. Callers of an older version
// of this package claim anew without deleting steps: upgrade every caller
// before using steps on a collection.
//
// # Fences
//
// A claim over an existing document, live or dead, increments its fence,
// so fences never repeat while the document exists. Once it is deleted
// (Delete, Cleanup, the TTL policy) the next claim starts again at fence 1;
// the owner token, unique per attempt, still tells a stale owner from the
// new one.
//
// # Expiry
//
// Expiry is judged on every read and claim. Firestore's TTL policies
// delete expired documents eventually (typically within a day); enable one
// on the ttl field of the collection group:
//
//	gcloud firestore fields ttls update ttl --collection-group=idempotency --enable-ttl
//
// The emulator has no TTL sweeper, and a database without the policy keeps
// dead documents: Cleanup (idemstore.Admin, `idemctl cleanup`) deletes the
// records past their retention, each under its update time, so a key
// claimed again meanwhile stays.
//
// # Wait
//
// Wait reads the document once and, if a live lease holds it, listens to
// it (DocumentRef.Snapshots): the write that completes, fails, releases or
// deletes the record wakes the waiter, and so does the lease's expiry. The
// waiter also polls the document, from 50ms backing off to 1s
// (WithPollInterval), so a listener that stalls or fails delays a waiter
// but never hangs it.
//
// # Outages
//
// The Firestore client retries an unavailable server until the call's
// context ends. Each store method therefore bounds its calls by an
// operation timeout (WithOperationTimeout, default 10s; Wait bounds each
// read, not the wait): past it the method fails with
// idem.ErrStoreUnavailable, and the Guard fails closed, even for a caller
// whose context has no deadline.
//
// # Document size
//
// Firestore rejects documents over 1 MiB. Complete and Fail bound the
// record's size before writing and return an error wrapping
// ErrDocumentTooLarge (and idem.ErrResultTooLarge) without a request when
// the result does not fit; MaxResultSize tells how many result bytes a key
// can hold. Steps count towards the document with each other (not with
// the result, which replaces them): SaveStep bounds the document with the
// new step and returns ErrDocumentTooLarge without writing when it does
// not fit.
//
// # Permissions
//
// The service account needs datastore.entities.get, create, update, delete
// and list on the database (roles/datastore.user); Cleanup and List query
// the collection (the single-field index on ttl and the document ID index
// are automatic).
//
// # Tests
//
// The tests run against the Google Cloud CLI's Firestore emulator, started
// by `make services` (scripts/firestore.sh, 127.0.0.1:8765);
// IDEM_FIRESTORE_EMULATOR_HOST (or FIRESTORE_EMULATOR_HOST) points them
// elsewhere. Without it they skip, and under CI=true they fail.
package firestorestore
