// Package dynamostore is an idemstore.Store on Amazon DynamoDB, for services on
// AWS (Lambda, ECS, EC2) that want idempotent functions without running a
// database of their own.
//
// # Usage
//
// Configure the DynamoDB client as usual (region, credentials, endpoint and
// retries are yours) and hand it to New with the table name:
//
//	cfg, err := config.LoadDefaultConfig(ctx)
//	client := dynamodb.NewFromConfig(cfg)
//	store, err := dynamostore.New(ctx, client, "idempotency") // one GetItem: fails if the table does not answer
//	g := idem.NewGuard(store)
//
// Each key is one item. Every Store method is one request. Claim is one
// conditional UpdateItem, or, for a key this store finished or found
// claimed lately (a likely duplicate), first one consistent GetItem that
// answers a replay with one read unit (replay.go); a first execution is two
// requests (Claim, Complete); heartbeats are UpdateItems off the caller's
// path. An ordered claim (see Ordering) is one round trip of two
// concurrent reads, then one TransactWriteItems when it executes.
//
// # Table schema
//
// The default layout is a table whose partition key is the string attribute
// "pk" and that has no sort key, with DynamoDB's time to live enabled on the
// number attribute "ttl". Options change the names (WithPartitionKey,
// WithTTLAttribute), put the records under a static sort key value in a
// shared table (WithSortKey, for single-table designs), and prefix the
// partition key values (WithKeyPrefix). CreateTable creates the table for
// development and tests; with infrastructure as code, declare it yourself.
// CloudFormation, default layout:
//
//	IdempotencyTable:
//	  Type: AWS::DynamoDB::Table
//	  Properties:
//	    TableName: idempotency
//	    BillingMode: PAY_PER_REQUEST
//	    AttributeDefinitions:
//	      - {AttributeName: pk, AttributeType: S}
//	    KeySchema:
//	      - {AttributeName: pk, KeyType: HASH}
//	    TimeToLiveSpecification: {AttributeName: ttl, Enabled: true}
//
// Terraform:
//
//	resource "aws_dynamodb_table" "idempotency" {
//	  name         = "idempotency"
//	  billing_mode = "PAY_PER_REQUEST"
//	  hash_key     = "pk"
//	  attribute {
//	    name = "pk"
//	    type = "S"
//	  }
//	  ttl {
//	    attribute_name = "ttl"
//	    enabled        = true
//	  }
//	}
//
// For a single-table design, add the sort key (type S) to both and pass
// WithSortKey("sk", "IDEM") (and perhaps WithKeyPrefix("IDEM#")): every
// record is then the item (pk = prefix+key, sk = "IDEM").
//
// The store writes these attributes on each item, besides the keys:
//
//	state        S  in_progress | completed | failed | released
//	owner        B  the owner token (16 bytes)
//	fence        N  the ownership fence; +1 on every claim
//	fp           B  the payload fingerprint (32 bytes)
//	result       B  the encoded result or recorded error (absent when empty)
//	lease_until  N  lease expiry, Unix nanoseconds, caller's clock
//	expires_at   N  when the record stops being live, Unix nanoseconds
//	updated_at   N  last write, Unix nanoseconds
//	claimed_at   N  when the current (or last) owner claimed the key, Unix
//	                nanoseconds; set by a claim or takeover only (items written
//	                before it existed lack it: a zero Record.ClaimedAt)
//	ttl          N  Unix seconds, for DynamoDB's time to live (name configurable)
//	steps        M  recovery points of an in-progress or released record:
//	                step name -> B, its encoded result (see Recovery points)
//
// An entity's order record (see Ordering) is an item of its own, keyed
// like a record by the order key the Guard builds, with
//
//	state        S  order (never a record's state: Get and Claim of its key
//	                say idem.ErrCorruptRecord, List skips it)
//	last_at      N  the entity's last accepted event time, Unix nanoseconds
//	expires_at   N  when it stops counting, Unix nanoseconds
//	version      N  +1 on every write
//	ttl          N  as on records
//
// The IAM policy needs dynamodb:GetItem, dynamodb:UpdateItem and
// dynamodb:DeleteItem on the table, dynamodb:Scan for List and Cleanup
// (operators: idemctl, idemobs.StaleScanner), and for ordered functions
// the same UpdateItem permission, which TransactWriteItems is authorized
// by (CreateTable also needs dynamodb:CreateTable, dynamodb:DescribeTable,
// dynamodb:DescribeTimeToLive and dynamodb:UpdateTimeToLive).
//
// # Expiry and fences
//
// Expiry is judged in code on every read and in every claim's condition;
// the ttl attribute only lets DynamoDB delete dead items eventually
// (typically within days), which costs no write capacity. A claim over an
// existing item, live or dead, increments its fence, so fences never repeat
// while the item is retained. Once DynamoDB's time to live (or Delete)
// removes the item, the next claim starts again at fence 1; the owner token,
// unique per attempt, still tells a stale owner from the new one.
//
// A live item keeps its first claim's fingerprint in every state: the
// claim's condition lets another fingerprint in only once the item is past
// its retention (expires_at; for an abandoned in-progress item, expires_at
// + SkewMargin, like its lease), so another payload cannot take over a
// crashed owner's lease or run after a release (idem.ErrPayloadMismatch).
//
// # Clocks and skew
//
// DynamoDB has no server clock an expression can read, so leases are judged
// by the callers' clocks: the owner writes lease_until = its now + lease,
// and another caller takes over only when its own clock reads at least
// lease_until + SkewMargin (WithSkewMargin, default 1s). Waiters use the
// same rule, so a waiter never spins on a lease it may not take over.
//
// What that tolerates, plainly: exclusivity holds as long as no two
// callers' clocks differ by more than SkewMargin. A caller whose clock runs
// d ahead of the owner's takes over a crashed owner's key after lease +
// margin - d of real time, and a live owner is never taken over while it
// heartbeats (every lease/3). If d exceeds the margin, a slow owner's lease
// is effectively shortened by d - margin; once d - margin reaches about two
// thirds of the lease, a live, heartbeating owner can be taken over and the
// function may run twice. Even then the fence rejects the stale owner's
// Complete (idem.ErrLeaseLost), so only one result is recorded; guard your
// own writes with idem.FenceFrom if they must not be doubled. Hosts synced
// by NTP or the Amazon Time Sync Service stay within milliseconds, far
// inside the default margin. The cost of the margin is that a crashed
// owner's key is taken over SkewMargin later. Retention (TTL) is measured
// by the writer's clock too; skew shifts it by d, which affects no
// exclusivity. Heartbeat, Complete, Fail and Release read no clock in their
// conditions: only a takeover or release rejects them, as idemstore.Store
// requires.
//
// # Wait
//
// DynamoDB cannot notify, so Wait polls the item with consistent reads,
// starting at 20ms and backing off (x1.5, with jitter) to at most 500ms
// (WithPollInterval), and never sleeping past the moment the lease becomes
// takeover-able.
//
// # Recovery points
//
// The store implements idemstore.Stepper: a call's steps (idem.Step) live in
// the steps map attribute of its record's item, so they expire and are
// deleted with it. SaveStep is one UpdateItem that sets steps.name if it
// is not set yet (a step keeps its first record), on the condition that
// the lease still holds (state in progress, owner and fence): a stale
// owner writes nothing and gets idem.ErrLeaseLost. A claim keeps the map
// (making an empty one where there is none, so that SaveStep's nested
// path exists), and the old item its UpdateItem returns (ALL_OLD) carries
// it: a takeover of an expired lease or the claim after a release
// resumes the call's steps in the claim's one round trip. A claim that
// makes the record anew, over an item past its retention, must not hand
// the old call's steps to the new one: the claim's condition refuses such
// an item while its map holds steps, and the store claims again with a
// condition on the retention alone and an update that empties the map,
// so a key reused after its retention, before DynamoDB's time to live
// has removed the abandoned item, costs one more request. Complete and
// Fail remove the map (the result replays from then on, and gets the
// whole item); Release and Heartbeat keep it. Step names are the map's
// keys, but for names DynamoDB cannot take or that could read as escaped:
// "", and names starting with "~" or of the form __x__ (reserved by
// Firestore, whose store escapes the same names) are stored as "~" and the
// name. Callers of an older version of this package claim without looking
// at steps: upgrade every caller before using steps on a table.
//
// # Ordering
//
// The store implements idemstore.Orderer (when the client has
// TransactWriteItems, as *dynamodb.Client does; TransactAPI). A claim
// with an idemstore.OrderClaim reads the call's item and the entity's order
// item with two consistent GetItems, concurrently, and decides in code
// as the memory store does: a retained record in progress, completed,
// failed or with another payload answers the claim without the order
// being looked at (a replay stays a replay); otherwise an event older
// than the entity's last accepted time minus the grace is
// idemstore.ClaimOutOfOrder (nothing is written), and an accepted one is
// written in one TransactWriteItems of two updates: the claim's update of
// the call's item, conditioned on the item being as read (absent, or
// the same state, fence, lease, expiry and number of steps: every write
// to a record changes one of them), and the order item's update
// (created with last_at = At where there is none; last_at set to At when
// At is not older than it or the order item has expired; for an accepted
// event older than last_at, within the grace or by an operator's
// override, only its expiry renewed: last_at only moves forward),
// conditioned on the order item being as read (absent, or at the version
// read). Either both writes
// apply or neither: if another claim, heartbeat or event wrote either
// item in between, the transaction is canceled and the claim reads and
// decides again (up to 16 rounds; a hot entity's events serialize on its
// order item). The order item lives max(TTL, lease) after its last
// accepted event, judged by the callers' clocks like leases. A replay
// costs one round trip (the reads), an ordered first execution three
// (reads, transaction, Complete); a transaction costs twice the write
// capacity of the writes.
//
// # Operators
//
// The store implements idemstore.Admin, which idemctl (dynamodb://TABLE
// store URLs) and idemobs.StaleScanner use. List and Cleanup Scan the
// table (consistent reads; the key prefix and sort key value are a filter,
// so a Scan reads the whole table: they are for operators, not a
// service's hot path; they need ScanAPI, which *dynamodb.Client has).
// ForceRelease reads the item and releases it with an UpdateItem
// conditioned on the item being as read (state, fence, last write,
// expiry), clearing the owner and bumping the fence. DynamoDB's time to
// live deletes dead items on its own, eventually; Cleanup deletes the
// items past their retention by the store's clock that it has not removed
// yet (all of them on emulators, which have no time to live), each with a
// DeleteItem conditioned on its still being past its retention, at most
// WithCleanupLimit items per call.
//
// # Item size
//
// DynamoDB rejects items over 400 KB. Complete and Fail compute the
// record's size before writing and return an error wrapping
// ErrItemTooLarge, without a request, when the result does not fit;
// MaxResultSize tells how many result bytes a key can hold. Steps count
// towards the item with each other (not with the result, which replaces
// them): SaveStep returns ErrItemTooLarge without a request for a step
// that cannot fit alone, and when DynamoDB refuses an update that would
// take the item over the limit.
//
// # Servers without ReturnValuesOnConditionCheckFailure
//
// A failed claim condition returns the existing item in the same response
// (ReturnValuesOnConditionCheckFailure=ALL_OLD). Servers that do not
// support that parameter (DynamoDB Local before December 2023, dynalite)
// return no item; the store then reads the item with a consistent GetItem,
// so a replay costs two round trips there, and retries the claim when the
// item changed in between.
//
// # Tests
//
// The tests run against dynalite, a DynamoDB-compatible server from npm,
// pinned in tools/package.json and started by `make services`
// (scripts/dynalite.sh, 127.0.0.1:4567; IDEM_DYNAMO_ENDPOINT points them
// elsewhere). tools/dynalite-server.js adds ReturnValuesOnConditionCheckFailure
// and TransactWriteItems (tools/dynalite-transact.js) to it, as DynamoDB
// has them (a server started from an older checkout lacks
// TransactWriteItems: the conformance runs then say so and check the
// store without ordering, and fail under CI=true); the conformance suite
// also runs with the
// parameter stripped to cover the fallback read, and the fault tests run
// a dynalite of their own without the addition (--plain).
//
// # Retries
//
// The SDK retries a request whose response was lost. When a retried Claim,
// Complete, Fail or Release finds that its own earlier attempt was applied
// (the item holds this owner and fence in the target state), it reports
// success instead of a conflict; a single attempt never does.
package dynamostore
