package pgstore

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// unhealthyPoll is how often Wait re-reads the record while the listener
// has no live LISTEN connection (starting, reconnecting, closed).
const unhealthyPoll = 50 * time.Millisecond

// listener holds the store's one LISTEN connection and fans notifications
// out to the waiters of this process. A waiter marks the record it waits
// on (records.waiters); finishing writes (Complete, Fail, Release, Delete,
// CompleteInTx) of a marked record NOTIFY the table's channel with
// md5(key) as the payload: fixed size, within NOTIFY's 8000-byte limit for
// any key. Unmarked records finish without NOTIFY, because a NOTIFYing
// commit holds a cluster-wide lock across its WAL flush, which would
// serialize every completion in the database.
type listener struct {
	s      *Store
	ctx    context.Context
	start  sync.Once
	done   chan struct{}
	up     atomic.Bool
	mu     sync.Mutex
	byHash map[string]map[*waiter]struct{}
}

type waiter struct{ ch chan struct{} }

func newListener(s *Store, ctx context.Context) *listener {
	return &listener{s: s, ctx: ctx, done: make(chan struct{}), byHash: make(map[string]map[*waiter]struct{})}
}

func keyHash(key string) string {
	sum := md5.Sum([]byte(key))
	return hex.EncodeToString(sum[:])
}

// ensure starts the listener goroutine on the first Wait, so a store that
// never waits never holds the extra connection.
func (l *listener) ensure() {
	l.start.Do(func() {
		if l.ctx.Err() != nil {
			close(l.done)
			return
		}
		go l.run()
	})
}

// close waits for the goroutine; the store's ctx is already canceled.
func (l *listener) close() {
	l.start.Do(func() { close(l.done) }) // never started
	<-l.done
}

func (l *listener) subscribe(hash string) *waiter {
	w := &waiter{ch: make(chan struct{}, 1)}
	l.mu.Lock()
	set := l.byHash[hash]
	if set == nil {
		set = make(map[*waiter]struct{})
		l.byHash[hash] = set
	}
	set[w] = struct{}{}
	l.mu.Unlock()
	return w
}

func (l *listener) unsubscribe(hash string, w *waiter) {
	l.mu.Lock()
	if set := l.byHash[hash]; set != nil {
		delete(set, w)
		if len(set) == 0 {
			delete(l.byHash, hash)
		}
	}
	l.mu.Unlock()
}

func (w *waiter) wake() {
	select {
	case w.ch <- struct{}{}:
	default: // a wake-up is already pending
	}
}

func (l *listener) dispatch(hash string) {
	l.mu.Lock()
	for w := range l.byHash[hash] {
		w.wake()
	}
	l.mu.Unlock()
}

// wakeAll makes every waiter re-read its record: after (re)connecting,
// notifications sent while no LISTEN was active are lost.
func (l *listener) wakeAll() {
	l.mu.Lock()
	for _, set := range l.byHash {
		for w := range set {
			w.wake()
		}
	}
	l.mu.Unlock()
}

func (l *listener) run() {
	defer close(l.done)
	cfg := l.s.pool.Config().ConnConfig
	listen := "LISTEN " + pgx.Identifier{l.s.n.channel}.Sanitize()
	backoff := 10 * time.Millisecond
	for l.ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(l.ctx, cfg)
		if err == nil {
			if _, err = conn.Exec(l.ctx, listen); err != nil {
				conn.Close(context.Background())
			}
		}
		if err != nil {
			l.report(fmt.Errorf("pgstore: listener for %s: %w", l.s.n.qTable, err))
			select {
			case <-time.After(backoff):
			case <-l.ctx.Done():
			}
			backoff = min(backoff*2, 2*time.Second)
			continue
		}
		backoff = 10 * time.Millisecond
		l.up.Store(true)
		l.wakeAll()
		for {
			n, err := conn.WaitForNotification(l.ctx)
			if err != nil {
				if l.ctx.Err() == nil {
					l.report(fmt.Errorf("pgstore: listener for %s: %w", l.s.n.qTable, err))
				}
				break
			}
			l.dispatch(n.Payload)
		}
		l.up.Store(false)
		l.wakeAll()
		conn.Close(context.Background())
	}
}

func (l *listener) report(err error) {
	if f := l.s.cfg.onError; f != nil {
		f(err)
	}
}

// Wait blocks until key has no live in-progress record. Notifications from
// the store's one listening connection wake it; it re-reads the record at
// least every poll interval and when the owner's lease runs out (judged by
// the database clock), so a lost notification delays it but never hangs it.
func (s *Store) Wait(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pgstore: wait %s: %w", key, err)
	}
	s.lis.ensure()
	hash := keyHash(key)
	// Subscribe before the first read: a NOTIFY between the read and the
	// sleep still wakes us.
	w := s.lis.subscribe(hash)
	defer s.lis.unsubscribe(hash, w)
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		d, done, err := s.waitCheck(ctx, key)
		if err != nil || done {
			return err
		}
		poll := s.cfg.poll
		if !s.lis.up.Load() {
			poll = min(poll, unhealthyPoll)
		}
		d = min(d, poll)
		if t == nil {
			t = time.NewTimer(d)
		} else {
			t.Reset(d)
		}
		select {
		case <-w.ch:
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("pgstore: wait %s: %w", key, ctx.Err())
		}
		if !t.Stop() {
			select { // drain a fire that raced with the wake-up
			case <-t.C:
			default:
			}
		}
	}
}

// waitCheck reads the record: done when it is not a live in-progress
// record, otherwise how long its lease has left by the database clock. It
// marks the record as waited on (once) so that finishing it sends a
// NOTIFY; finishing writes skip the NOTIFY when nobody waits.
func (s *Store) waitCheck(ctx context.Context, key string) (time.Duration, bool, error) {
	c, err := s.acquire(ctx, "wait")
	if err != nil {
		return 0, false, err
	}
	defer c.Release()
	for {
		var (
			state                      int16
			owner                      []byte
			fence                      int64
			waiters                    bool
			leaseUntil, expiresAt, now time.Time
		)
		err = c.QueryRow(ctx, s.q.waitCheck, key, s.ts()).Scan(&state, &owner, &fence, &waiters, &leaseUntil, &expiresAt, &now)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, true, nil
		}
		if err != nil {
			return 0, false, s.wrap(ctx, "wait", key, err)
		}
		if state != stInProgress || !now.Before(leaseUntil) || !now.Before(expiresAt) {
			return 0, true, nil
		}
		if !waiters {
			// Compare-and-set on the owner and fence just read: if the
			// record finished or changed hands in between, read again.
			tag, err := c.Exec(ctx, s.q.waitArm, key, owner, fence)
			if err != nil {
				return 0, false, s.wrap(ctx, "wait", key, err)
			}
			if tag.RowsAffected() == 0 {
				continue
			}
		}
		// Wake just after the lease ends so the re-read sees it expired.
		return leaseUntil.Sub(now) + time.Millisecond, false, nil
	}
}
