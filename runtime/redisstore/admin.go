package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idem"
)

var _ idem.Admin = (*Store)(nil)

// ForceRelease implements idem.Admin: it releases key whatever its owner
// and bumps its fence, so a still-running owner can neither heartbeat nor
// complete; waiters wake.
func (s *Store) ForceRelease(ctx context.Context, key string) (idem.Record, error) {
	if err := s.ready(ctx, "force release", key); err != nil {
		return idem.Record{}, err
	}
	rk := s.RecordKey(key)
	op := s.op()
	var res []any
	err := s.bounded(ctx, func() (err error) {
		res, err = s.scripts.forceRelease.Run(ctx, s.rdb, []string{rk}, channelOf(rk), op).Slice()
		return err
	})
	if err != nil {
		return idem.Record{}, s.wrap(ctx, "force release", key, err)
	}
	code, err := replyInt(res, 0)
	if err != nil {
		return idem.Record{}, s.badReply("force release", key, res, err)
	}
	switch code {
	case -1:
		return idem.Record{}, fmt.Errorf("redisstore: %s: %w", key, idem.ErrNotFound)
	case 0:
		return idem.Record{}, corrupt(key, replyString(res, 1))
	}
	v, _ := res[1].(string)
	return decodeRecord(key, v, 0) // the script wrote version 3: absolute times
}

// List implements idem.Admin: it scans the store's keys (every master of a
// Cluster) for records whose store key starts with prefix. Entity order
// records are not records and are skipped. A value at a record key that
// is not a valid record gets the verdict Claim and Get give it: it does
// not stop the listing, and List returns an error naming every one
// (wrapping idem.ErrCorruptRecord) at the end, as the file store does. An
// error from fn stops it at once and is returned.
func (s *Store) List(ctx context.Context, prefix string, fn func(idem.Record) error) error {
	if err := s.ready(ctx, "list", prefix); err != nil {
		return err
	}
	patterns := []string{
		globEscape(s.prefix) + "{" + globEscape(prefix) + "*",
		globEscape(s.prefix) + "=" + globEscape(prefix) + "*",
	}
	// Cluster nodes are scanned concurrently; fn runs serially (it may call
	// the store) and is not called again after it returns an error.
	var fnMu sync.Mutex
	var stopped error // fn's error: no more calls after it
	var corrupted []error
	scan := func(ctx context.Context, c *redis.Client) error {
		for _, pat := range patterns {
			iter := c.Scan(ctx, 0, pat, 500).Iterator()
			var batch []string
			flush := func() error {
				if len(batch) == 0 {
					return nil
				}
				// PEXPIRETIME places fresh claims' relative times (and says
				// when a fresh claim has no expiry).
				cmds := make([]*redis.StringCmd, len(batch))
				expiries := make([]*redis.IntCmd, len(batch))
				_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
					for i, k := range batch {
						cmds[i] = p.Get(ctx, k)
						// ms since the epoch, -1 without an expiry: read raw,
						// as the scripts do (PExpireTime's Duration blurs -1)
						expiries[i] = redis.NewIntCmd(ctx, "pexpiretime", k)
						_ = p.Process(ctx, expiries[i])
					}
					return nil
				})
				if err != nil && err != redis.Nil && !strings.HasPrefix(err.Error(), "WRONGTYPE") {
					return err
				}
				for i, k := range batch {
					v, err := cmds[i].Result()
					if err == redis.Nil {
						continue // expired meanwhile
					}
					key, ok := s.storeKey(k)
					if !ok || !strings.HasPrefix(key, prefix) {
						continue
					}
					if err == nil && strings.HasPrefix(v, "o1:") {
						continue // an entity's order record
					}
					var r idem.Record
					switch {
					case err == nil:
						r, err = decodeRecord(key, v, expiries[i].Val())
					case strings.HasPrefix(err.Error(), "WRONGTYPE"):
						err = corrupt(key, "cannot read the record key: "+err.Error())
					}
					if errors.Is(err, idem.ErrCorruptRecord) {
						fnMu.Lock()
						corrupted = append(corrupted, err)
						fnMu.Unlock()
						continue
					}
					if err != nil {
						return err
					}
					fnMu.Lock()
					if stopped == nil {
						stopped = fn(r)
					}
					err = stopped
					fnMu.Unlock()
					if err != nil {
						return err
					}
				}
				batch = batch[:0]
				return nil
			}
			for iter.Next(ctx) {
				batch = append(batch, iter.Val())
				if len(batch) == 500 {
					if err := flush(); err != nil {
						return err
					}
				}
			}
			if err := iter.Err(); err != nil {
				return err
			}
			if err := flush(); err != nil {
				return err
			}
		}
		return nil
	}
	var whole func() error
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		whole = func() error { return cc.ForEachMaster(ctx, scan) }
	} else if c, ok := s.rdb.(*redis.Client); ok {
		whole = func() error { return scan(ctx, c) }
	} else {
		return fmt.Errorf("redisstore: list: unsupported client %T", s.rdb)
	}
	err := s.bounded(ctx, whole)
	fnMu.Lock()
	if ctx.Err() != nil && stopped == nil {
		// The scan may have been abandoned and still be running: fn is
		// not called after List returns. (Taking fnMu waited for a call
		// in progress.)
		stopped = ctx.Err()
	}
	if stopped != nil && !errors.Is(stopped, ctx.Err()) {
		err = stopped // fn's own error, not another node's echo of it
	}
	skipped := corrupted
	fnMu.Unlock()
	if err != nil && (ctx.Err() != nil || stopped == nil) {
		// Not fn's error: the scan's (a server that cannot be reached).
		return s.wrap(ctx, "list", prefix, err)
	}
	if err == nil && len(skipped) > 0 {
		return fmt.Errorf("redisstore: list skipped %d corrupt record(s): %w", len(skipped), errors.Join(skipped...))
	}
	return err
}

// Cleanup implements idem.Admin. Redis removes records itself when their
// TTL ends, at or before the record's expiry, so there is normally nothing
// to clean up and Cleanup returns 0. It deletes any record still seen past
// its expiry by the server's clock (and wakes its waiters).
func (s *Store) Cleanup(ctx context.Context) (int, error) {
	var stale []string
	err := s.List(ctx, "", func(r idem.Record) error {
		if !time.Now().Before(r.ExpiresAt) {
			stale = append(stale, r.Key)
		}
		return nil
	})
	n := 0
	for _, key := range stale {
		if err != nil {
			break
		}
		rk := s.RecordKey(key)
		var d int64
		err = s.bounded(ctx, func() (err error) {
			d, err = s.scripts.cleanup.Run(ctx, s.rdb, []string{rk}, channelOf(rk)).Int64()
			return err
		})
		if err != nil {
			err = s.wrap(ctx, "cleanup", key, err)
		}
		n += int(d)
	}
	return n, err
}

// globEscape quotes SCAN MATCH's special characters.
func globEscape(s string) string {
	if !strings.ContainsAny(s, `*?[]\`) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
