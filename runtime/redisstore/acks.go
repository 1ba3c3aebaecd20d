package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/redis/go-redis/v9"
)

// Replica acknowledgements and failover fences: see "Failover" in doc.go.

// ErrNotReplicated: a claim, heartbeat, completion, failure or release
// reached the primary but fewer replicas than WithReplicaAcks asks for
// confirmed it in time (or the primary failed while they were asked).
// Errors matching it also match idem.ErrStoreUnavailable, so the Guard
// fails closed: an unacknowledged claim is not executed under (the store
// releases it, and the Guard's orphan search does too; failing that it
// expires with its lease), and an unacknowledged completion is reported to
// its caller as a result that was not recorded after the store retried it
// for as long as the write's ctx allowed.
var ErrNotReplicated = errors.New("redisstore: not acknowledged by enough replicas")

// replicaAcks is WithReplicaAcks's setting; n == 0 is off.
type replicaAcks struct {
	n       int
	timeout time.Duration
}

// WithReplicaAcks makes every claim that acquires or takes over a key,
// and every heartbeat, completion, failure and release, count only once n
// replicas of the key's primary have it: the store sends WAIT n timeout
// on a connection to that primary after confirming, in the same round
// trip, that the key still holds the record that write produced. Without
// n acknowledgements within timeout the call returns an error matching
// ErrNotReplicated and idem.ErrStoreUnavailable; a completion or failure
// is first retried (and written again on a newly promoted primary that
// lost it) until the write's ctx ends. Replays and reads are not waited
// on.
//
// The client must be a *redis.Client (standalone, or Sentinel through
// redis.NewFailoverClient) or a *redis.ClusterClient, and timeout must be
// positive and shorter than the client's ReadTimeout (WAIT blocks the
// connection for up to timeout). WAIT is not consensus; see doc.go
// ("Failover") for what it does and does not guarantee. Servers from
// Redis 7.2 also have WAITAOF; this store uses WAIT only.
func WithReplicaAcks(n int, timeout time.Duration) Option {
	return func(c *config) { c.acks = replicaAcks{n: n, timeout: timeout} }
}

// WithClockFences makes a claim's fence max(previous fence + 1, the
// server's time in µs) instead of previous fence + 1, so fences stay
// strictly increasing across a failover that lost the last increments (a
// promoted replica's clock has moved past the fences its lost writes
// carried, as long as the servers' clocks agree to better than the time a
// failover takes). Every claim then runs the claim script (no SET NX fast
// path), which costs a first execution and a replay some server CPU. All
// stores sharing a prefix should agree on this option.
func WithClockFences() Option { return func(c *config) { c.clockFences = true } }

// checkAcks validates WithReplicaAcks against the client at build time.
func (s *Store) checkAcks() error {
	a := s.acks
	if a.n == 0 {
		return nil
	}
	if a.n < 0 || a.timeout <= 0 {
		return fmt.Errorf("redisstore: WithReplicaAcks(%d, %v): want n > 0 and a positive timeout", a.n, a.timeout)
	}
	var rt time.Duration
	switch c := s.rdb.(type) {
	case *redis.Client:
		rt = c.Options().ReadTimeout
	case *redis.ClusterClient:
		rt = c.Options().ReadTimeout
	default:
		return fmt.Errorf("redisstore: WithReplicaAcks needs a *redis.Client or *redis.ClusterClient, not %T: WAIT must reach the key's primary on the connection that confirms the write", s.rdb)
	}
	// The options are normalised by now: go-redis's default (5s in this
	// version) is filled in, and 0 or less means no read timeout.
	if rt > 0 && a.timeout >= rt {
		return fmt.Errorf("redisstore: WithReplicaAcks timeout %v is not shorter than the client's ReadTimeout %v: the client would give up on WAIT first", a.timeout, rt)
	}
	return nil
}

// clockClaimScript is claimScript with WithClockFences's fence.
var clockClaimScript = redis.NewScript(clockClaimSrc)

var clockClaimSrc = strings.Replace(claimSrc, "\nfence = fence + 1\n", "\nfence = math.max(fence + 1, now)\n", 1)

func (s *Store) claimScript() *redis.Script {
	if s.clockFences {
		return s.scripts.clockClaim
	}
	return s.scripts.claim
}

// ackScript confirms that KEYS[1] holds the record written by the op id
// ARGV[1] of owner ARGV[2], and re-propagates it (PEXPIREAT to its own
// expiry, which changes nothing) so that the connection's replication
// offset covers it and the WAIT after it on the same connection counts
// replicas that have this record, whoever's connection wrote it and
// whichever node was primary then. Returns {1, state, fence} when it is
// ours, {0, state, fence} otherwise ({0, 0, 0}: no record).
var ackScript = redis.NewScript(`
local v = redis.pcall('GET', KEYS[1])
if type(v) ~= 'string' or #v < 91 or string.byte(v, 1) ~= 167 then return {0, 0, 0} end
local st, fence = struct.unpack('>BI8', v, 3)
if string.sub(v, 36, 43) ~= ARGV[1] or string.sub(v, 44, 59) ~= ARGV[2] then return {0, st, fence} end
local at = redis.call('PEXPIRETIME', KEYS[1])
if at > 0 then redis.call('PEXPIREAT', KEYS[1], at) else redis.call('SET', KEYS[1], v, 'KEEPTTL') end
return {1, st, fence}
`)

// replicated is one confirmation: whether the key holds the record of
// write op by owner (ours), that record's state and fence, and how many
// replicas acknowledged it.
type replicated struct {
	ours         bool
	state, fence int64
	acked        int64
}

// replicate runs ackScript and WAIT in one pipeline on one connection to
// the primary that holds rk.
func (s *Store) replicate(ctx context.Context, rk string, op, owner []byte) (replicated, error) {
	// r is written by call, which bounded may abandon still running when
	// ctx ends: it is read only when bounded returned call's own nil.
	var r replicated
	err := s.bounded(ctx, func() error {
		var node *redis.Client
		switch c := s.rdb.(type) {
		case *redis.ClusterClient:
			n, err := c.MasterForKey(ctx, rk)
			if err != nil {
				return err
			}
			node = n
		case *redis.Client:
			node = c
		}
		pipe := node.Pipeline()
		v := ackScript.Eval(ctx, pipe, []string{rk}, op, owner)
		// Pipeliner has no Wait; the client's ReadTimeout (longer than
		// the WAIT timeout, see checkAcks) bounds the reply.
		w := redis.NewIntCmd(ctx, "wait", s.acks.n, s.acks.timeout.Milliseconds())
		_ = pipe.Process(ctx, w)
		_, _ = pipe.Exec(ctx)
		res, err := v.Slice()
		if err != nil {
			return err
		}
		ours, err1 := replyInt(res, 0)
		st, err2 := replyInt(res, 1)
		fence, err3 := replyInt(res, 2)
		if err := errors.Join(err1, err2, err3); err != nil {
			return fmt.Errorf("unexpected reply %v: %w", res, err)
		}
		acked, err := w.Result()
		if err != nil {
			return err
		}
		r = replicated{ours: ours == 1, state: st, fence: fence, acked: acked}
		return nil
	})
	if err != nil {
		if c, ok := s.rdb.(*redis.ClusterClient); ok {
			// MOVED after a promotion, or the old primary gone: the next
			// MasterForKey must see the new slot map.
			c.ReloadState(ctx)
		}
		return replicated{}, err
	}
	return r, nil
}

// notReplicated is the error of a write that did not get its acknowledgements.
func (s *Store) notReplicated(op, key string, fence uint64, r replicated, cause error) error {
	switch {
	case cause != nil:
		return fmt.Errorf("redisstore: %s %s fence %d: %w: %w: asking for %d replica(s): %w",
			op, key, fence, idem.ErrStoreUnavailable, ErrNotReplicated, s.acks.n, cause)
	case !r.ours:
		return fmt.Errorf("redisstore: %s %s fence %d: %w: %w: the primary no longer holds this write (record is %s at fence %d; a failover lost it?)",
			op, key, fence, idem.ErrStoreUnavailable, ErrNotReplicated, stateName(r.state), r.fence)
	}
	return fmt.Errorf("redisstore: %s %s fence %d: %w: %w: %d of %d replica(s) within %v",
		op, key, fence, idem.ErrStoreUnavailable, ErrNotReplicated, r.acked, s.acks.n, s.acks.timeout)
}

func stateName(st int64) string {
	if st == 0 {
		return "absent"
	}
	return idemstore.State(st).String()
}

// ackClaim holds a claim that acquired or took over the key until n
// replicas have it. One that does not get them is given back and reported
// as ErrNotReplicated: the caller does not own the key.
func (s *Store) ackClaim(ctx context.Context, req idemstore.ClaimRequest, rk string, op []byte, res idemstore.ClaimResult, err error) (idemstore.ClaimResult, error) {
	if err != nil || s.acks.n == 0 || (res.Status != idemstore.ClaimAcquired && res.Status != idemstore.ClaimTakenOver) {
		return res, err
	}
	r, aerr := s.replicate(ctx, rk, op, req.Owner[:])
	if aerr == nil && r.ours && r.acked >= int64(s.acks.n) {
		return res, nil
	}
	if aerr != nil && ctx.Err() != nil {
		aerr = s.wrap(ctx, "claim", req.Key, aerr)
	}
	nerr := s.notReplicated("claim", req.Key, res.Fence, r, aerr)
	// Give the key back at once where the primary still has the claim; a
	// release that does not land leaves it to expire with its lease.
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.acks.timeout+time.Second)
	defer cancel()
	l := idemstore.Lease{Key: req.Key, Owner: req.Owner, Fence: res.Fence, Duration: req.Lease, TTL: req.TTL}
	_ = s.applyWrite(gctx, "release", l, rk, packWrite(idemstore.StateReleased, l.Fence, req.TTL, s.op(), req.Owner), []byte{})
	return idemstore.ClaimResult{}, nerr
}

// packWrite is write's packed argument.
func packWrite(st idemstore.State, fence uint64, d time.Duration, op []byte, owner idemstore.Token) []byte {
	arg := make([]byte, 41)
	arg[0] = byte(st)
	putBE64(arg[1:], fence)
	putBE64(arg[9:], uint64(micro(d)))
	copy(arg[17:25], op)
	copy(arg[25:], owner[:])
	return arg
}

func putBE64(b []byte, v uint64) {
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

// ackWrite holds an applied fenced write, whose op id is opID, until n
// replicas have it. A completion, failure or step (retry) is retried
// until ctx ends: asked again on the primary, and written again by again
// (with the same op id) when a newly promoted primary still holds the
// caller's claim (its write was lost with the old primary). A heartbeat
// or release is asked once: a heartbeat that fails leaves the Guard
// counting the lease from the last acknowledged one, a release that fails
// leaves the key to expire.
func (s *Store) ackWrite(ctx context.Context, op string, l idemstore.Lease, rk string, opID []byte, retry bool, again func(context.Context) error) error {
	delay := 20 * time.Millisecond
	for {
		r, err := s.replicate(ctx, rk, opID, l.Owner[:])
		switch {
		case err == nil && r.ours && r.acked >= int64(s.acks.n):
			return nil
		case err == nil && !r.ours && retry && r.state == int64(idemstore.StateInProgress) && uint64(r.fence) == l.Fence:
			// The primary that took the write is gone and the promoted
			// one has the claim without it: write it again.
			if werr := again(ctx); werr != nil {
				return werr
			}
			continue
		case err == nil && !r.ours && retry:
			// Another owner's record, or none: the claim itself is gone.
			return fmt.Errorf("redisstore: %s %s fence %d: %w: record is %s at fence %d after a failover or takeover",
				op, l.Key, l.Fence, idem.ErrLeaseLost, stateName(r.state), r.fence)
		}
		if cerr := ctx.Err(); cerr != nil {
			// The ctx ended, possibly while the last WAIT ran: say so,
			// as the timer below does, whatever that WAIT answered.
			if err == nil {
				err = fmt.Errorf("%d of %d replica(s) within %v, then %w", r.acked, s.acks.n, s.acks.timeout, cerr)
			}
			return s.notReplicated(op, l.Key, l.Fence, r, s.wrap(ctx, op, l.Key, err))
		}
		if !retry {
			return s.notReplicated(op, l.Key, l.Fence, r, err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return s.notReplicated(op, l.Key, l.Fence, r, s.wrap(ctx, op, l.Key, ctx.Err()))
		case <-t.C:
		}
		delay = min(2*delay, 500*time.Millisecond)
	}
}
