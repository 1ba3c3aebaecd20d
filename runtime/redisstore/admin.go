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
	"github.com/idemgen/idemgen/runtime/idemstore"
)

var _ idemstore.Admin = (*Store)(nil)

// ForceRelease implements idemstore.Admin: it releases key whatever its owner
// and bumps its fence, so a still-running owner can neither heartbeat nor
// complete; waiters wake.
func (s *Store) ForceRelease(ctx context.Context, key string) (idemstore.Record, error) {
	if err := s.ready(ctx, "force release", key); err != nil {
		return idemstore.Record{}, err
	}
	rk := s.RecordKey(key)
	op := s.op()
	var res []any
	err := s.bounded(ctx, func() (err error) {
		res, err = s.scripts.forceRelease.Run(ctx, s.rdb, []string{rk}, channelOf(rk), op).Slice()
		return err
	})
	if err != nil {
		return idemstore.Record{}, s.wrap(ctx, "force release", key, err)
	}
	code, err := replyInt(res, 0)
	if err != nil {
		return idemstore.Record{}, s.badReply("force release", key, res, err)
	}
	switch code {
	case -1:
		return idemstore.Record{}, fmt.Errorf("redisstore: %s: %w", key, idem.ErrNotFound)
	case 0:
		return idemstore.Record{}, corrupt(key, replyString(res, 1))
	}
	v, _ := res[1].(string)
	return decodeRecord(key, v, 0) // the script wrote version 3: absolute times
}

// List implements idemstore.Admin: it scans the store's keys (every master of a
// Cluster) for records whose store key starts with prefix. Entity order
// records are not records and are skipped. A value at a record key that
// is not a valid record gets the verdict Claim and Get give it: it does
// not stop the listing, and List returns an error naming every one
// (wrapping idem.ErrCorruptRecord) at the end, as the file store does. An
// error from fn stops it at once and is returned.
func (s *Store) List(ctx context.Context, prefix string, fn func(idemstore.Record) error) error {
	if err := s.ready(ctx, "list", prefix); err != nil {
		return err
	}
	l := &lister{s: s, prefix: prefix, fn: fn, patterns: []string{
		globEscape(s.prefix) + "{" + globEscape(prefix) + "*",
		globEscape(s.prefix) + "=" + globEscape(prefix) + "*",
	}}
	var whole func() error
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		whole = func() error { return cc.ForEachMaster(ctx, l.scan) }
	} else if c, ok := s.rdb.(*redis.Client); ok {
		whole = func() error { return l.scan(ctx, c) }
	} else {
		return fmt.Errorf("redisstore: list: unsupported client %T", s.rdb)
	}
	return l.result(ctx, s.bounded(ctx, whole))
}

// listBatch is how many keys List asks for per SCAN and reads per pipeline.
const listBatch = 500

// lister is one List call. Cluster nodes are scanned concurrently; fn
// runs serially (it may call the store) and is not called again after it
// returns an error.
type lister struct {
	s        *Store
	prefix   string
	patterns []string
	fn       func(idemstore.Record) error

	mu        sync.Mutex
	stopped   error // fn's error: no more calls after it
	corrupted []error
}

// scan lists the records of one node.
func (l *lister) scan(ctx context.Context, c *redis.Client) error {
	for _, pat := range l.patterns {
		iter := c.Scan(ctx, 0, pat, listBatch).Iterator()
		var batch []string
		for iter.Next(ctx) {
			batch = append(batch, iter.Val())
			if len(batch) == listBatch {
				if err := l.flush(ctx, c, batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		if err := iter.Err(); err != nil {
			return err
		}
		if err := l.flush(ctx, c, batch); err != nil {
			return err
		}
	}
	return nil
}

// flush reads the values at batch's keys in one pipeline and hands the
// records among them to fn.
func (l *lister) flush(ctx context.Context, c *redis.Client, batch []string) error {
	if len(batch) == 0 {
		return nil
	}
	// PEXPIRETIME places fresh claims' relative times (and says when a
	// fresh claim has no expiry).
	cmds := make([]*redis.StringCmd, len(batch))
	expiries := make([]*redis.IntCmd, len(batch))
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range batch {
			cmds[i] = p.Get(ctx, k)
			// ms since the epoch, -1 without an expiry: read raw, as the
			// scripts do (PExpireTime's Duration blurs -1)
			expiries[i] = redis.NewIntCmd(ctx, "pexpiretime", k)
			_ = p.Process(ctx, expiries[i])
		}
		return nil
	})
	if err != nil && err != redis.Nil && !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		return err
	}
	for i, k := range batch {
		if err := l.one(k, cmds[i], expiries[i].Val()); err != nil {
			return err
		}
	}
	return nil
}

// one hands the record at Redis key k, read by get, to fn, or notes it
// as corrupt. It returns fn's error or a read's.
func (l *lister) one(k string, get *redis.StringCmd, expiry int64) error {
	v, err := get.Result()
	if err == redis.Nil {
		return nil // expired meanwhile
	}
	key, ok := l.s.storeKey(k)
	if !ok || !strings.HasPrefix(key, l.prefix) {
		return nil
	}
	if err == nil && strings.HasPrefix(v, "o1:") {
		return nil // an entity's order record
	}
	var r idemstore.Record
	switch {
	case err == nil:
		r, err = decodeRecord(key, v, expiry)
	case strings.HasPrefix(err.Error(), "WRONGTYPE"):
		err = corrupt(key, "cannot read the record key: "+err.Error())
	}
	if errors.Is(err, idem.ErrCorruptRecord) {
		l.mu.Lock()
		l.corrupted = append(l.corrupted, err)
		l.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped == nil {
		l.stopped = l.fn(r)
	}
	return l.stopped
}

// result is List's error, given the scan's err.
func (l *lister) result(ctx context.Context, err error) error {
	l.mu.Lock()
	if ctx.Err() != nil && l.stopped == nil {
		// The scan may have been abandoned and still be running: fn is
		// not called after List returns. (Taking mu waited for a call in
		// progress.)
		l.stopped = ctx.Err()
	}
	stopped := l.stopped
	if stopped != nil && !errors.Is(stopped, ctx.Err()) {
		err = stopped // fn's own error, not another node's echo of it
	}
	skipped := l.corrupted
	l.mu.Unlock()
	if err != nil && (ctx.Err() != nil || stopped == nil) {
		// Not fn's error: the scan's (a server that cannot be reached).
		return l.s.wrap(ctx, "list", l.prefix, err)
	}
	if err == nil && len(skipped) > 0 {
		return fmt.Errorf("redisstore: list skipped %d corrupt record(s): %w", len(skipped), errors.Join(skipped...))
	}
	return err
}

// Cleanup implements idemstore.Admin. Redis removes records itself when their
// TTL ends, at or before the record's expiry, so there is normally nothing
// to clean up and Cleanup returns 0. It deletes any record still seen past
// its expiry by the server's clock (and wakes its waiters).
func (s *Store) Cleanup(ctx context.Context) (int, error) {
	var stale []string
	err := s.List(ctx, "", func(r idemstore.Record) error {
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
		if err == nil && d == 1 {
			s.dropItems(ctx, key)
		}
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
