package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Store is an idemstore.Store over a go-redis UniversalClient. It is safe for
// concurrent use. Make one per client and prefix and share it; call Close
// when done to stop its pub/sub subscriptions (it does not close the client).
type Store struct {
	rdb redis.UniversalClient
	config

	opSeed  uint64
	opCount atomic.Uint64

	// streaming holds the leases (streamLease) that appended stream
	// items: only their fenced writes name the items key too. A script
	// naming two keys is refused with TRYAGAIN while its slot migrates
	// and one of the keys is absent, so a call without a stream must not
	// name its (absent) items key.
	streaming sync.Map

	// honoursDeadline: the client puts a ctx's deadline on its socket
	// reads and writes (ContextTimeoutEnabled), so a call with a deadline
	// needs no watcher of its own; see bounded.
	honoursDeadline bool

	checked  atomic.Bool
	checkMu  sync.Mutex
	checkErr error // set when the eviction policy is refused

	hub     *hub
	scripts *scriptSet // classicScripts, or shardedScripts on a Cluster (wait.go)

	pipe *pipe // nil with pipelining off; see pipeline.go
}

var _ idemstore.Store = (*Store)(nil)

// Option configures New.
type Option func(*config)

// config is what the options set.
type config struct {
	prefix      string
	log         *slog.Logger
	policy      EvictionMode
	poll        time.Duration
	acks        replicaAcks // WithReplicaAcks (acks.go)
	clockFences bool        // WithClockFences (acks.go)
	noPipe      bool        // WithPipelining(false) (pipeline.go)
	maxRecord   int         // MaxRecordBytes, smaller in tests (steps.go)
}

// WithKeyPrefix puts every Redis key and channel of the store under prefix
// (default "", the Guard's own key prefix already namespaces keys). Stores
// with different prefixes never see each other's records. The prefix must
// not contain '{' or '}', which would change the keys' Cluster hash slot.
func WithKeyPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithLogger sets where the store reports its start-up checks and
// subscription trouble (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithEvictionCheck sets what the store does when the server's
// maxmemory-policy can evict its records (default EvictionWarn).
func WithEvictionCheck(m EvictionMode) Option { return func(c *config) { c.policy = m } }

// WithPollInterval bounds how long Wait goes without re-reading the record
// when no notification arrives (default 500ms). A waiter also re-reads at
// the owner's lease expiry, which no notification announces.
func WithPollInterval(d time.Duration) Option { return func(c *config) { c.poll = d } }

// New returns a store over rdb: a *redis.Client (standalone or Sentinel
// failover) or a *redis.ClusterClient. It checks that Redis answers with
// one PING bounded by ctx, so a server that is down, refuses the
// connection or rejects the credentials fails here, with an error wrapping
// idem.ErrStoreUnavailable and the cause, instead of on the first call.
// The store keeps no reference to ctx.
func New(ctx context.Context, rdb redis.UniversalClient, opts ...Option) (*Store, error) {
	s, err := build(rdb, opts)
	if err != nil {
		return nil, err
	}
	if err := ping(ctx, rdb); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// noMaint turns maintenance notifications off for ping's probe client. A
// copy of rdb's options shares rdb's notification handlers, and go-redis
// logged "failed to initialize maintnotifications: … cannot overwrite
// existing handler" to the application's stderr at every New; a PING
// needs no notifications.
var noMaint = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}

// ping sends one PING, bounded by ctx. For the go-redis clients it goes
// through a short-lived client with rdb's options (address, TLS,
// credentials, Sentinel or Cluster discovery) but without retries: rdb
// would retry a refused connection for seconds, and a ctx that ends first
// would then hide the cause behind its own error.
func ping(ctx context.Context, rdb redis.UniversalClient) error {
	var p redis.UniversalClient = rdb
	target := ""
	switch c := rdb.(type) {
	case *redis.Client:
		o := *c.Options()
		o.MaxRetries, o.DialerRetries, o.PoolSize, o.MinIdleConns, o.MaxIdleConns = -1, 1, 1, 0, 0
		o.MaintNotificationsConfig = noMaint // see noMaint
		p, target = redis.NewClient(&o), o.Addr
		if target == "FailoverClient" { // go-redis's name for a Sentinel client
			target = "the Sentinel master"
		}
	case *redis.ClusterClient:
		o := *c.Options()
		o.MaxRetries, o.DialerRetries, o.PoolSize, o.MinIdleConns, o.MaxIdleConns = -1, 1, 1, 0, 0
		o.MaintNotificationsConfig = noMaint
		p, target = redis.NewClusterClient(&o), strings.Join(o.Addrs, ",")
	case *redis.Ring:
		addrs := make([]string, 0, len(c.Options().Addrs))
		for _, a := range c.Options().Addrs {
			addrs = append(addrs, a)
		}
		slices.Sort(addrs)
		target = strings.Join(addrs, ",")
	}
	if p != rdb {
		defer p.Close()
	}
	err := watched(ctx, func() error { return p.Ping(ctx).Err() })
	if err == nil {
		return nil
	}
	// The address once: a dial error names it already.
	if target != "" && !strings.Contains(err.Error(), target) {
		return fmt.Errorf("redisstore: %w: no answer from Redis at %s: %w", idem.ErrStoreUnavailable, target, err)
	}
	return fmt.Errorf("redisstore: %w: no answer from Redis: %w", idem.ErrStoreUnavailable, err)
}

// build is New without the PING (tests of servers that never answer).
func build(rdb redis.UniversalClient, opts []Option) (*Store, error) {
	if rdb == nil {
		return nil, errors.New("redisstore: nil client")
	}
	s := &Store{rdb: rdb, config: config{log: slog.Default(), poll: 500 * time.Millisecond, maxRecord: MaxRecordBytes}}
	for _, o := range opts {
		o(&s.config)
	}
	if strings.ContainsAny(s.prefix, "{}") {
		return nil, fmt.Errorf("redisstore: prefix %q contains '{' or '}': it would move every key into one Cluster hash slot", s.prefix)
	}
	if s.poll <= 0 {
		return nil, fmt.Errorf("redisstore: poll interval %v is not positive", s.poll)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var seed [8]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return nil, fmt.Errorf("redisstore: no randomness for op ids: %w", err)
	}
	s.opSeed = binary.BigEndian.Uint64(seed[:])
	s.honoursDeadline = honoursDeadline(rdb)
	if err := s.checkAcks(); err != nil {
		return nil, err
	}
	s.scripts = classicScripts
	if _, ok := rdb.(*redis.ClusterClient); ok {
		s.scripts = shardedScripts
	}
	s.hub = newHub(s)
	if !s.noPipe {
		s.pipe = &pipe{s: s, rdb: rdb, maxFlushers: maxFlushers}
	}
	return s, nil
}

// honoursDeadline reports whether rdb bounds its socket I/O by a ctx's
// deadline: go-redis does only with ContextTimeoutEnabled, and otherwise
// waits for its own ReadTimeout and WriteTimeout (3s by default, then
// retries). A client the store cannot inspect is assumed not to.
func honoursDeadline(rdb redis.UniversalClient) bool {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// bounded runs call, which talks to Redis with ctx, and returns its error,
// or ctx's error as soon as ctx is done, whichever comes first, so that
// every store call is bounded by its ctx whatever the client's settings.
// It runs call in a goroutine of its own only when that is needed: not
// when ctx can never be done (no Done channel, as context.Background),
// nor when ctx has a deadline the client puts on its sockets
// (ContextTimeoutEnabled; a cancellation before that deadline is then
// seen at the deadline). An abandoned call runs on to its end in its
// goroutine, bounded by the client's own timeouts, and hands its
// connection back to the pool as any finished call does (go-redis closes a
// connection whose read failed instead), so the pool is not left holding
// a half-read reply. Its effect on the server may still happen: the caller
// sees ctx's error and must treat the outcome as unknown, as for any
// timeout. call's results must not be read after bounded returned ctx's
// error.
func (s *Store) bounded(ctx context.Context, call func() error) error {
	if s.honoursDeadline {
		if _, ok := ctx.Deadline(); ok {
			return call()
		}
	}
	return watched(ctx, call)
}

// watched is bounded without trusting the client with the deadline: the
// pub/sub connection's set-up (and its HELLO) does not honour it even with
// ContextTimeoutEnabled.
func watched(ctx context.Context, call func() error) error {
	done := ctx.Done()
	if done == nil {
		return call()
	}
	errc := make(chan error, 1) // buffered: an abandoned call does not block
	go func() { errc <- call() }()
	select {
	case err := <-errc:
		return err
	case <-done:
		return ctx.Err()
	}
}

// Close stops the store's pub/sub subscriptions, waking blocked
// waiters with an error. It does not close the Redis client.
func (s *Store) Close() error { return s.hub.close() }

// RecordKey is the Redis key that holds key's record. A store key that
// carries its own hash tag (the Guard tags the keys of ordered functions
// with their entity, "…:{<entity>}:…", so a call and its entity's order
// record share a slot) becomes "<prefix>=<key>"; any other key is wrapped
// in one, "<prefix>{<key>}". Either way the record and its notification
// channel (RecordKey + ":done") map to one Cluster slot, and the first byte
// after the prefix keeps the mapping one-to-one.
func (s *Store) RecordKey(key string) string {
	if hasTag(key) {
		return s.prefix + "=" + key
	}
	return s.prefix + "{" + key + "}"
}

// storeKey inverts RecordKey; ok is false for a Redis key that is not one
// of this store's record keys.
func (s *Store) storeKey(rk string) (key string, ok bool) {
	k, found := strings.CutPrefix(rk, s.prefix)
	switch {
	case !found || k == "":
	case k[0] == '=' && hasTag(k[1:]):
		return k[1:], true
	case k[0] == '{' && len(k) >= 2 && k[len(k)-1] == '}' && !hasTag(k[1:len(k)-1]):
		return k[1 : len(k)-1], true
	}
	return "", false
}

// hasTag reports whether Redis Cluster would hash key by a tag: a '{'
// followed later by a '}' with at least one byte between them.
func hasTag(key string) bool {
	i := strings.IndexByte(key, '{')
	return i >= 0 && strings.IndexByte(key[i+1:], '}') > 0
}

// SupportsOrdering implements idemstore.Orderer: a claim with an OrderClaim
// checks and advances the entity's order record in the same script. In a
// Cluster the call's key and the order key must share a hash tag, as the
// Guard's keys do.
func (s *Store) SupportsOrdering() bool { return true }

func channelOf(recordKey string) string { return recordKey + ":done" }

// op returns a fresh op id: unique per call, repeated by go-redis's
// retries of that call, so a script can recognise its own earlier run.
func (s *Store) op() []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], s.opSeed+s.opCount.Add(1))
	return b[:]
}

// Claim implements idemstore.Store.
//
// A claim without ordering is first one SET NX GET, with no script: it
// creates a fresh in-progress record (fence 1) when the key has none, and
// otherwise returns the record in place without changing it. That settles
// the two common cases, a first execution and the replay of a finished
// record, in one round trip at the cost of a plain SET on the server (a
// script costs Redis five to seven times as much; see
// BenchmarkReplayServerCPU). Anything else it finds (in
// progress, released, corrupt) goes on to the claim script, which judges
// leases by the server's clock, takes over, or reports.
//
// The SET NX cannot acquire over another payload's retained record: a
// record's Redis expiry is its retention (lease + TTL in progress, TTL
// once finished or released), so NX writes only where no record is
// retained, and a record it finds is returned, not replaced. The claim
// script refuses another fingerprint in every state of a live record.
func (s *Store) Claim(ctx context.Context, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	if err := s.ready(ctx, "claim", req.Key); err != nil {
		return idemstore.ClaimResult{}, err
	}
	rk := s.RecordKey(req.Key)
	op := s.op()
	if req.Order.Key == "" && !s.clockFences {
		if res, ok, err := s.claimFresh(ctx, rk, req, op); ok || err != nil {
			return s.ackClaim(ctx, req, rk, op, res, err) // acks.go
		}
	}
	res, err := s.runClaim(ctx, req, rk, op)
	if err != nil {
		return idemstore.ClaimResult{}, err
	}
	out, err := s.claimReply(req.Key, res)
	if err != nil {
		return idemstore.ClaimResult{}, err
	}
	return s.ackClaim(ctx, req, rk, op, out, nil) // acks.go
}

// runClaim runs the claim script for req and returns its reply.
func (s *Store) runClaim(ctx context.Context, req idemstore.ClaimRequest, rk string, op []byte) ([]any, error) {
	keys := []string{rk}
	args := []any{req.Owner[:], req.Fingerprint[:], micro(req.Lease), micro(req.TTL), channelOf(rk), op}
	if o := req.Order; o.Key != "" {
		override := 0
		if o.Override {
			override = 1
		}
		keys = append(keys, s.RecordKey(o.Key))
		args = append(args, o.At.UnixMicro(), micro(o.Grace), override)
	}
	var res []any
	run := func(c redis.Scripter) (err error) {
		res, err = s.claimScript().Run(ctx, c, keys, args...).Slice()
		return err
	}
	var err error
	if len(keys) > 1 {
		// An ordered claim (two keys) goes alone, never in a pipeline: it
		// is the command a Cluster refuses with TRYAGAIN while its slot
		// migrates, and when the first command go-redis's Cluster
		// pipeline sent to a node gets TRYAGAIN, go-redis sends every
		// command of that node again, also those it has already queued
		// for an ASK target, so one command runs on two nodes at once and
		// two goroutines write its reply.
		err = s.untilSlotSettled(ctx, func() error { return s.bounded(ctx, func() error { return run(s.rdb) }) })
	} else {
		err = s.piped(ctx, run)
	}
	if err != nil {
		return nil, s.wrap(ctx, "claim", req.Key, err)
	}
	return res, nil
}

// claimReply reads the claim script's reply {status, fence, lease µs or
// last accepted µs, steps or finished record} for key.
func (s *Store) claimReply(key string, res []any) (idemstore.ClaimResult, error) {
	st, err := replyInt(res, 0)
	if err != nil {
		return idemstore.ClaimResult{}, s.badReply("claim", key, res, err)
	}
	if st == 0 {
		return idemstore.ClaimResult{}, corrupt(key, replyString(res, 1))
	}
	fence, err1 := replyInt(res, 1)
	lease, err2 := replyInt(res, 2)
	if err := errors.Join(err1, err2); err != nil || st > int64(idemstore.ClaimOutOfOrder) {
		return idemstore.ClaimResult{}, s.badReply("claim", key, res, err)
	}
	out := idemstore.ClaimResult{Status: idemstore.ClaimStatus(st), Fence: uint64(fence)}
	switch out.Status {
	case idemstore.ClaimAcquired, idemstore.ClaimTakenOver, idemstore.ClaimInProgress:
		out.LeaseUntil = micros(uint64(lease))
		if len(res) > 3 && out.Status != idemstore.ClaimInProgress {
			// the steps of the retained record it resumes (steps.go)
			v, _ := res[3].(string)
			if out.Steps, err = decodeSteps(key, v); err != nil {
				return idemstore.ClaimResult{}, err
			}
		}
	case idemstore.ClaimCompleted, idemstore.ClaimFailed:
		v, _ := res[3].(string)
		off, ok := 0, len(v) >= headerLen
		if ok {
			off, ok = dataOffset(v)
		}
		if !ok {
			return idemstore.ClaimResult{}, corrupt(key, "finished record without a header")
		}
		out.Fence = be64(v, offFence)
		out.Result.Data = []byte(v[off:])
	case idemstore.ClaimOutOfOrder:
		out.LastAccepted = time.UnixMicro(lease)
	}
	return out, nil
}

// slotSettleWait bounds how long untilSlotSettled tries a command again
// that a Cluster refused because its slot is moving: longer than a slot's
// migration normally takes (its keys MIGRATEd in batches), short enough
// that a migration left half-done (a resharding tool that died between
// SETSLOT MIGRATING and SETSLOT NODE) surfaces as an error instead of a
// hang.
var slotSettleWait = 10 * time.Second

// untilSlotSettled runs call, and again while it fails with a refusal
// that says the key's slot is moving (slotRefused), with a growing pause
// (5ms to 100ms), for up to slotSettleWait and never past ctx.
//
// A Cluster answers TRYAGAIN to a command on several keys of a slot in
// migration when the node does not hold all of them (the source once one
// has moved or does not exist, the target until every one has arrived):
// an ordered claim's script (the call's record and its entity's order
// record) gets it for as long as the migration lasts. go-redis retries
// TRYAGAIN only MaxRedirects times (3 by default), within tens of
// milliseconds, and a pipelined command not at all. And those retries
// share go-redis's budget with MOVED and ASK redirections, so a command
// that used it up on TRYAGAIN while the slot was handed over returns the
// MOVED (or ASK) it got last instead of following it. Each of these is
// the server's refusal before it runs the command: nothing happened, so
// trying again is safe.
func (s *Store) untilSlotSettled(ctx context.Context, call func() error) error {
	var deadline time.Time
	pause := 5 * time.Millisecond
	for {
		err := call()
		if err == nil || !slotRefused(err) {
			return err
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(slotSettleWait)
		}
		if time.Now().Add(pause).After(deadline) {
			return err
		}
		timer := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			timer.Stop()
			return err // wrap reports ctx's error with it
		case <-timer.C:
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// slotRefused reports whether err is a Cluster's refusal of a command
// because of where its slot is (TRYAGAIN, or a MOVED or ASK that go-redis
// did not follow): the command did not run.
func slotRefused(err error) bool {
	if redis.IsTryAgainError(err) {
		return true
	}
	_, moved := redis.IsMovedError(err)
	_, ask := redis.IsAskError(err)
	return moved || ask
}

// claimFresh is the SET NX GET step of Claim; ok is false when the claim
// script must decide.
func (s *Store) claimFresh(ctx context.Context, rk string, req idemstore.ClaimRequest, op []byte) (res idemstore.ClaimResult, ok bool, err error) {
	v, px := encodeFresh(req.Owner, req.Fingerprint, op, req.Lease, req.TTL)
	sent := time.Now()
	cmd := redis.NewStringCmd(ctx, "set", rk, v, "px", px, "nx", "get")
	var old string
	if err = s.process(ctx, cmd); err == nil {
		old = cmd.Val()
	}
	switch {
	case err == redis.Nil:
		// The key was free and now holds our claim. Its lease is judged by
		// the server's clock; LeaseUntil here is the local estimate.
		return idemstore.ClaimResult{Status: idemstore.ClaimAcquired, Fence: 1, LeaseUntil: sent.Add(req.Lease)}, true, nil
	case err != nil && (strings.HasPrefix(err.Error(), "WRONGTYPE") || strings.HasPrefix(err.Error(), "OOM ")):
		// Not a string (the script reports it), or a server at maxmemory
		// that refuses any SET, even one that would not write: the script
		// still serves a replay there.
		return res, false, nil
	case err != nil:
		return res, false, s.wrap(ctx, "claim", req.Key, err)
	}
	if len(old) < headerLen || old[0] != recordMagic {
		return res, false, nil
	}
	st := idemstore.State(old[offState])
	switch {
	case old[1] == freshVersion && st == idemstore.StateInProgress &&
		old[offOwner:offFP] == string(req.Owner[:]) && old[offOp:offOwner] == string(op):
		// Our own SET, run again by the client's retry after a lost reply.
		return idemstore.ClaimResult{Status: idemstore.ClaimAcquired, Fence: 1, LeaseUntil: sent.Add(req.Lease)}, true, nil
	case !finishedVersion(old[1]) || (st != idemstore.StateCompleted && st != idemstore.StateFailed):
		return res, false, nil
	}
	off, ok := dataOffset(old)
	switch {
	case !ok:
		return res, false, nil // the script reports it
	case old[offFP:headerLen] != string(req.Fingerprint[:]):
		return idemstore.ClaimResult{Status: idemstore.ClaimMismatch, Fence: be64(old, offFence)}, true, nil
	}
	// A finished record that exists is live: its Redis TTL ends no later
	// than its expiry.
	res = idemstore.ClaimResult{Status: idemstore.ClaimCompleted, Fence: be64(old, offFence), Result: idemstore.Result{Data: []byte(old[off:])}}
	if st == idemstore.StateFailed {
		res.Status = idemstore.ClaimFailed
	}
	return res, true, nil
}

// Heartbeat implements idemstore.Store.
func (s *Store) Heartbeat(ctx context.Context, l idemstore.Lease) error {
	return s.write(ctx, "heartbeat", l, idemstore.StateInProgress, l.Duration, nil)
}

// Complete implements idemstore.Store.
func (s *Store) Complete(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	return s.write(ctx, "complete", l, idemstore.StateCompleted, l.TTL, r.Data)
}

// Fail implements idemstore.Store.
func (s *Store) Fail(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	return s.write(ctx, "fail", l, idemstore.StateFailed, l.TTL, r.Data)
}

// Release implements idemstore.Store.
func (s *Store) Release(ctx context.Context, l idemstore.Lease) error {
	return s.write(ctx, "release", l, idemstore.StateReleased, l.TTL, nil)
}

func (s *Store) write(ctx context.Context, op string, l idemstore.Lease, st idemstore.State, d time.Duration, data []byte) (err error) {
	if err := s.ready(ctx, op, l.Key); err != nil {
		return err
	}
	defer func() {
		if st != idemstore.StateInProgress || errors.Is(err, idem.ErrLeaseLost) {
			s.forgetItems(l)
		}
	}()
	rk := s.RecordKey(l.Key)
	if data == nil {
		data = []byte{}
	}
	// The packed argument: state, fence, duration µs, op id, owner.
	var arg [41]byte
	arg[0] = byte(st)
	binary.BigEndian.PutUint64(arg[1:], l.Fence)
	binary.BigEndian.PutUint64(arg[9:], uint64(micro(d)))
	copy(arg[17:25], s.op())
	copy(arg[25:], l.Owner[:])
	if err := s.applyWrite(ctx, op, l, rk, arg[:], data); err != nil || s.acks.n == 0 {
		return err
	}
	again := func(ctx context.Context) error { return s.applyWrite(ctx, op, l, rk, arg[:], data) }
	return s.ackWrite(ctx, op, l, rk, arg[17:25], op == "complete" || op == "fail", again) // acks.go
}

// applyWrite runs the write script once with the packed argument arg.
func (s *Store) applyWrite(ctx context.Context, op string, l idemstore.Lease, rk string, arg, data []byte) error {
	keys := []string{rk}
	if s.appended(l) {
		keys = append(keys, s.ItemsKey(l.Key))
	}
	res, code, err := s.runFenced(ctx, op, l, s.scripts.write, keys, arg, data)
	if err != nil || code == 1 {
		return err
	}
	return s.badReply(op, l.Key, res, nil)
}

// runFenced runs a fenced script (write, step, append) on keys once and reads the
// replies they share: {1} written, {0, reason} a record it cannot read,
// {-1, state, fence} a caller that does not own the key. It returns a
// reply with any other code for the caller to read.
func (s *Store) runFenced(ctx context.Context, op string, l idemstore.Lease, script *redis.Script, keys []string, args ...any) (res []any, code int64, err error) {
	err = s.piped(ctx, func(c redis.Scripter) (err error) {
		res, err = script.Run(ctx, c, keys, args...).Slice()
		return err
	})
	if err != nil {
		return nil, 0, s.wrap(ctx, op, l.Key, err)
	}
	code, err = replyInt(res, 0)
	switch {
	case err != nil:
		return nil, 0, s.badReply(op, l.Key, res, err)
	case code == 0:
		return nil, 0, corrupt(l.Key, replyString(res, 1))
	case code == -1:
		return nil, 0, leaseLost(op, l, res)
	}
	return res, code, nil
}

// leaseLost is the error of a fenced write whose script answered {-1,
// state, fence}: the caller does not own the key.
func leaseLost(op string, l idemstore.Lease, res []any) error {
	rst, _ := replyInt(res, 1)
	rfence, _ := replyInt(res, 2)
	if rst == 0 {
		return fmt.Errorf("redisstore: %s %s fence %d: %w: no record", op, l.Key, l.Fence, idem.ErrLeaseLost)
	}
	return fmt.Errorf("redisstore: %s %s fence %d: %w: record is %s at fence %d",
		op, l.Key, l.Fence, idem.ErrLeaseLost, idemstore.State(rst), rfence)
}

// read returns the server's time and the record at key; found is false
// when there is no value at all. A value that is not a record is an error.
func (s *Store) read(ctx context.Context, op, key string) (now time.Time, r idemstore.Record, found bool, err error) {
	if err := s.ready(ctx, op, key); err != nil {
		return now, r, false, err
	}
	var res []any
	err = s.untilSlotSettled(ctx, func() error {
		return s.bounded(ctx, func() (err error) {
			res, err = readScript.Run(ctx, s.rdb, []string{s.RecordKey(key)}).Slice()
			return err
		})
	})
	if err != nil {
		return now, r, false, s.wrap(ctx, op, key, err)
	}
	us, err := replyInt(res, 0)
	if err != nil || len(res) < 2 {
		return now, r, false, s.badReply(op, key, res, err)
	}
	now = micros(uint64(us))
	if len(res) > 3 {
		return now, r, false, corrupt(key, "cannot read the record key: "+replyString(res, 3))
	}
	v, ok := res[1].(string)
	if !ok {
		return now, r, false, nil
	}
	at, _ := replyInt(res, 2)
	r, err = decodeRecord(key, v, at)
	return now, r, err == nil, err
}

// Get implements idemstore.Store.
func (s *Store) Get(ctx context.Context, key string) (idemstore.Record, error) {
	now, r, found, err := s.read(ctx, "get", key)
	if err != nil {
		return idemstore.Record{}, err
	}
	if !found || !now.Before(r.ExpiresAt) {
		return idemstore.Record{}, fmt.Errorf("redisstore: %s: %w", key, idem.ErrNotFound)
	}
	return r, nil
}

// Delete implements idemstore.Store. It removes whatever value is at the record
// key, also one that is not a valid record, and its stream's items, and
// wakes the key's waiters.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.ready(ctx, "delete", key); err != nil {
		return err
	}
	rk := s.RecordKey(key)
	var n int64
	err := s.bounded(ctx, func() (err error) {
		n, err = s.scripts.del.Run(ctx, s.rdb, []string{rk}, channelOf(rk)).Int64()
		return err
	})
	if err == nil {
		s.dropItems(ctx, key)
	}
	if err != nil {
		return s.wrap(ctx, "delete", key, err)
	}
	if n == 0 {
		return fmt.Errorf("redisstore: %s: %w", key, idem.ErrNotFound)
	}
	return nil
}

// ready checks ctx and, once per store, the eviction policy.
func (s *Store) ready(ctx context.Context, op, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("redisstore: %s %s: %w", op, key, err)
	}
	if s.checked.Load() {
		return s.checkErr
	}
	if err := s.checkEviction(ctx); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		// The check ran out of time: so would the operation.
		return fmt.Errorf("redisstore: %s %s: %w", op, key, err)
	}
	return nil
}

// wrap classifies a client error: the ctx's own error when it is done or
// the client timed out at its deadline (idemimpl.CtxErr: with
// ContextTimeoutEnabled the socket deadline can fire before the ctx's
// timer), otherwise idem.ErrStoreUnavailable around the cause.
func (s *Store) wrap(ctx context.Context, op, key string, err error) error {
	if cerr := idemimpl.CtxErr(ctx, err); cerr != nil {
		if errors.Is(err, cerr) {
			return fmt.Errorf("redisstore: %s %s: %w", op, key, err)
		}
		return fmt.Errorf("redisstore: %s %s: %w (%w)", op, key, cerr, err)
	}
	if strings.HasPrefix(err.Error(), "OOM ") {
		// maxmemory reached under noeviction: like a full memory or file
		// store, new keys cannot be claimed while replays still work.
		return fmt.Errorf("redisstore: %s %s: %w: %w", op, key, idem.ErrStoreFull, err)
	}
	return fmt.Errorf("redisstore: %s %s: %w: %w", op, key, idem.ErrStoreUnavailable, err)
}

func (s *Store) badReply(op, key string, res []any, err error) error {
	return fmt.Errorf("redisstore: %s %s: %w: unexpected script reply %v (%v)", op, key, idem.ErrStoreUnavailable, res, err)
}

func replyInt(res []any, i int) (int64, error) {
	if i >= len(res) {
		return 0, fmt.Errorf("reply has %d elements, want index %d", len(res), i)
	}
	v, ok := res[i].(int64)
	if !ok {
		return 0, fmt.Errorf("reply element %d is %T, want int64", i, res[i])
	}
	return v, nil
}

func replyString(res []any, i int) string {
	if i < len(res) {
		if v, ok := res[i].(string); ok {
			return v
		}
	}
	return "unreadable record"
}

// micro converts a duration to the scripts' µs, rounding a positive
// sub-microsecond duration up so it is never zero.
func micro(d time.Duration) int64 {
	us := d.Microseconds()
	if us == 0 && d > 0 {
		us = 1
	}
	return us
}
