package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/redis/go-redis/v9"
)

// EvictionMode is what a store does at first use when a server's
// maxmemory-policy can evict its records.
type EvictionMode uint8

const (
	// EvictionWarn logs a warning and carries on (the default).
	EvictionWarn EvictionMode = iota
	// EvictionRefuse fails every operation with ErrUnsafeEviction
	// (wrapped in idem.ErrStoreUnavailable) until the store is recreated.
	// A policy that cannot be read (CONFIG disabled, as on some managed
	// services) is logged, not refused.
	EvictionRefuse
	// EvictionIgnore skips the check.
	EvictionIgnore
)

// ErrUnsafeEviction: the server may evict idempotency records under memory
// pressure, which would let a duplicate run again and reuse a fence.
var ErrUnsafeEviction = errors.New("redisstore: maxmemory-policy can evict idempotency records")

var errPolicyUnreadable = errors.New("redisstore: unreadable eviction configuration")

// nodePolicy is one server's eviction configuration.
type nodePolicy struct {
	addr      string
	policy    string
	maxmemory int64
}

// unsafe reports whether the server can evict our keys. Every record key
// has a TTL, so the volatile-* policies (which evict only keys with a TTL)
// can evict them exactly like the allkeys-* ones. Only noeviction keeps
// them; with maxmemory 0 (no limit) nothing is evicted whatever the policy.
func (p nodePolicy) unsafe() bool { return p.policy != "noeviction" && p.maxmemory != 0 }

// checkEviction reads maxmemory-policy from every master once. A network
// error leaves the check for the next call (the operation itself will
// report the outage); a server that refuses CONFIG is logged and accepted.
func (s *Store) checkEviction(ctx context.Context) error {
	s.checkMu.Lock()
	defer s.checkMu.Unlock()
	if s.checked.Load() {
		return s.checkErr
	}
	if s.policy == EvictionIgnore {
		s.checked.Store(true)
		return nil
	}
	var nodes []nodePolicy
	err := s.bounded(ctx, func() (err error) { nodes, err = s.policies(ctx); return err })
	if err != nil {
		var rerr redis.Error
		if errors.As(err, &rerr) || errors.Is(err, errPolicyUnreadable) {
			s.log.Warn("redisstore: cannot read maxmemory-policy; make sure it is noeviction (or maxmemory is 0), or idempotency records may be evicted",
				"error", err)
			s.checked.Store(true)
		}
		return nil
	}
	for _, n := range nodes {
		if !n.unsafe() {
			if n.policy != "noeviction" {
				s.log.Info("redisstore: maxmemory is 0 so nothing is evicted now, but maxmemory-policy would evict idempotency records if a limit is set; prefer noeviction",
					"addr", n.addr, "maxmemory-policy", n.policy)
			}
			continue
		}
		if s.policy == EvictionRefuse {
			s.checkErr = fmt.Errorf("%w: %w: %s has maxmemory-policy %s with maxmemory %d; set it to noeviction",
				idem.ErrStoreUnavailable, ErrUnsafeEviction, n.addr, n.policy, n.maxmemory)
			s.log.Error("redisstore: refusing to use a server that can evict idempotency records",
				"addr", n.addr, "maxmemory-policy", n.policy, "maxmemory", n.maxmemory)
			break
		}
		s.log.Warn("redisstore: maxmemory-policy can evict idempotency records (every record has a TTL, so volatile-* policies evict them too); a duplicate could then run again. Set maxmemory-policy noeviction",
			"addr", n.addr, "maxmemory-policy", n.policy, "maxmemory", n.maxmemory)
	}
	s.checked.Store(true)
	return s.checkErr
}

func (s *Store) policies(ctx context.Context) ([]nodePolicy, error) {
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		var out []nodePolicy
		err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			p, err := policyOf(ctx, c)
			mu.Lock()
			out = append(out, p)
			mu.Unlock()
			return err
		})
		return out, err
	}
	p, err := policyOf(ctx, s.rdb)
	return []nodePolicy{p}, err
}

func policyOf(ctx context.Context, c redis.Cmdable) (nodePolicy, error) {
	p := nodePolicy{}
	if cl, ok := c.(*redis.Client); ok {
		p.addr = cl.Options().Addr
	}
	m, err := c.ConfigGet(ctx, "maxmemory*").Result()
	if err != nil {
		return p, err
	}
	p.policy = strings.ToLower(m["maxmemory-policy"])
	if p.policy == "" {
		return p, fmt.Errorf("%w: CONFIG GET returned no maxmemory-policy", errPolicyUnreadable)
	}
	p.maxmemory, err = strconv.ParseInt(m["maxmemory"], 10, 64)
	if err != nil {
		return p, fmt.Errorf("%w: maxmemory %q: %w", errPolicyUnreadable, m["maxmemory"], err)
	}
	return p, nil
}
