package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/redis/go-redis/v9"
)

// A store's waiters share one pub/sub connection (the hub): each waited-on
// key's channel is subscribed once, reference-counted, and unsubscribed when
// its last waiter leaves. The scripts publish "<state>:<fence>" when a key
// leaves in_progress (or "1:<fence>" on a takeover, "d:0" on a delete), so a
// waiter usually returns without reading the record again.
//
// Notifications can be lost (a reconnect, a full buffer); a waiter then
// re-reads the record at its poll interval and at the owner's lease expiry,
// and every reconnect wakes all waiters to re-read at once.

// pingEvery is how long the subscription may be silent before the hub
// pings it; a ping unanswered for as long again replaces the connection.
const pingEvery = 5 * time.Second

type hub struct {
	s      *Store
	mu     sync.Mutex
	ps     *redis.PubSub // nil until the first Wait
	subs   map[string]*subscription
	closed bool
	done   chan struct{} // closed by close: stops the receive loop's sleeps
	wg     sync.WaitGroup
}

type subscription struct {
	waiters   map[*waiter]struct{}
	confirmed bool
	ready     chan struct{} // closed at the first confirmation
}

type waiter struct {
	channel string
	sub     *subscription
	// notes carries payloads; "" asks for a re-read. A full buffer drops
	// the note: the waiter is awake with notes to read anyway.
	notes chan string
}

func newHub(s *Store) *hub {
	return &hub{s: s, subs: make(map[string]*subscription), done: make(chan struct{})}
}

var errClosed = errors.New("redisstore: store closed")

// register adds a waiter on channel, subscribing it if it is new.
func (h *hub) register(ctx context.Context, channel string) (*waiter, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errClosed
	}
	if h.ps == nil {
		h.ps = h.s.rdb.Subscribe(context.WithoutCancel(ctx))
		h.wg.Add(1)
		go h.run(h.ps)
	}
	sub := h.subs[channel]
	if sub == nil {
		sub = &subscription{waiters: make(map[*waiter]struct{}), ready: make(chan struct{})}
		h.subs[channel] = sub
		// go-redis remembers the channel even when the write fails and
		// subscribes it again on its next connection; until then the
		// waiter polls.
		ps := h.ps
		if err := watched(ctx, func() error { return ps.Subscribe(ctx, channel) }); err != nil && ctx.Err() == nil {
			h.s.log.Debug("redisstore: subscribe failed; waiting by polling", "channel", channel, "error", err)
		}
	}
	w := &waiter{channel: channel, sub: sub, notes: make(chan string, 4)}
	sub.waiters[w] = struct{}{}
	return w, nil
}

// unregister removes w. The last waiter of a channel unsubscribes it,
// for at most a second, and no longer than ctx (the waiter's) lasts: an
// unsubscribe abandoned at ctx's end finishes in the background, and one
// that lands after a new subscription of the same channel only makes
// that waiter poll.
func (h *hub) unregister(ctx context.Context, w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(w.sub.waiters, w)
	if len(w.sub.waiters) > 0 || h.subs[w.channel] != w.sub {
		return
	}
	delete(h.subs, w.channel)
	if h.ps != nil && !h.closed {
		ps := h.ps
		unsubscribe := func(ctx context.Context) error {
			uctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			return ps.Unsubscribe(uctx, w.channel)
		}
		if ctx.Err() != nil {
			go unsubscribe(context.WithoutCancel(ctx)) //nolint:errcheck // best effort, off the caller's path
			return
		}
		_ = watched(ctx, func() error { return unsubscribe(ctx) })
	}
}

// run reads the subscription until ps is closed or replaced.
func (h *hub) run(ps *redis.PubSub) {
	defer h.wg.Done()
	ctx := context.Background()
	pinged, failures := false, 0
	for {
		msg, err := ps.ReceiveTimeout(ctx, pingEvery)
		if err != nil {
			if errors.Is(err, redis.ErrClosed) || h.isClosed() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if !pinged {
					pinged = true
					_ = ps.Ping(ctx)
					continue
				}
				// Silent through a ping: the connection is dead without
				// saying so. Start over on a fresh one.
				h.replace(ps)
				return
			}
			// go-redis reconnects and resubscribes on the next receive;
			// meanwhile notifications may be lost, so everyone re-reads.
			h.wakeAll()
			failures++
			select {
			case <-time.After(min(time.Duration(failures)*50*time.Millisecond, time.Second)):
			case <-h.done:
				return
			}
			continue
		}
		pinged, failures = false, 0
		switch m := msg.(type) {
		case *redis.Message:
			h.notify(m.Channel, m.Payload)
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				h.confirm(m.Channel)
			}
		}
	}
}

func (h *hub) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// replace swaps a dead subscription connection for a new one that
// subscribes every channel still waited on.
func (h *hub) replace(old *redis.PubSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.ps != old {
		return
	}
	_ = old.Close()
	h.s.log.Warn("redisstore: pub/sub connection stopped answering; reconnecting")
	h.ps = h.s.rdb.Subscribe(context.Background())
	channels := make([]string, 0, len(h.subs))
	for ch, sub := range h.subs {
		channels = append(channels, ch)
		for w := range sub.waiters {
			poke(w, "")
		}
	}
	if len(channels) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = h.ps.Subscribe(ctx, channels...)
		cancel()
	}
	h.wg.Add(1)
	go h.run(h.ps)
}

func (h *hub) confirm(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	sub := h.subs[channel]
	if sub == nil {
		return
	}
	if !sub.confirmed {
		sub.confirmed = true
		close(sub.ready)
		return
	}
	// Subscribed again after a reconnect: notes sent meanwhile are lost.
	for w := range sub.waiters {
		poke(w, "")
	}
}

func (h *hub) notify(channel, payload string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if sub := h.subs[channel]; sub != nil {
		for w := range sub.waiters {
			poke(w, payload)
		}
	}
}

func (h *hub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, sub := range h.subs {
		for w := range sub.waiters {
			poke(w, "")
		}
	}
}

func poke(w *waiter, note string) {
	select {
	case w.notes <- note:
	default:
	}
}

func (h *hub) close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	close(h.done)
	ps := h.ps
	for _, sub := range h.subs {
		for w := range sub.waiters {
			poke(w, "")
		}
	}
	h.mu.Unlock()
	var err error
	if ps != nil {
		err = ps.Close()
	}
	h.wg.Wait()
	if errors.Is(err, redis.ErrClosed) {
		err = nil
	}
	return err
}

// Wait implements idem.Store: it returns once key has no live in-progress
// record, woken by the owner's completion message, and re-reads the record
// at least every poll interval and at the owner's lease expiry.
func (s *Store) Wait(ctx context.Context, key string) error {
	if err := s.ready(ctx, "wait", key); err != nil {
		return err
	}
	w, err := s.hub.register(ctx, channelOf(s.RecordKey(key)))
	if err != nil {
		return fmt.Errorf("redisstore: wait %s: %w: %w", key, idem.ErrStoreUnavailable, err)
	}
	defer s.hub.unregister(ctx, w)

	// Read the record only once the subscription is live, so a completion
	// between the read and the subscription cannot be missed. A slow
	// confirmation only delays the first read.
	timer := time.NewTimer(s.poll)
	defer timer.Stop()
	select {
	case <-w.sub.ready:
	case <-timer.C:
	case <-ctx.Done():
		return fmt.Errorf("redisstore: wait %s: %w", key, ctx.Err())
	}
	var r idem.Record
	for first := true; ; first = false {
		now, rec, found, err := s.read(ctx, "wait", key)
		if err != nil {
			// The first read answers whether there is anything to wait for.
			// Later ones may fail through a restart or failover: keep
			// waiting (bounded by ctx) and read again after a poll interval.
			if first || errors.Is(err, idem.ErrCorruptRecord) || ctx.Err() != nil {
				return err
			}
			timer.Reset(s.poll)
			select {
			case <-ctx.Done():
				return fmt.Errorf("redisstore: wait %s: %w (last read: %w)", key, ctx.Err(), err)
			case <-timer.C:
			}
			continue
		}
		r = rec
		if !found || r.State != idem.StateInProgress || !now.Before(r.LeaseUntil) || !now.Before(r.ExpiresAt) {
			return nil
		}
		if s.hub.isClosed() {
			return fmt.Errorf("redisstore: wait %s: %w: %w", key, idem.ErrStoreUnavailable, errClosed)
		}
		// The lease's remaining time is measured on the server's clock, so
		// the local timer is right whatever this host's clock says.
		timer.Reset(min(s.poll, r.LeaseUntil.Sub(now)+time.Millisecond))
	listen:
		for {
			select {
			case <-ctx.Done():
				return fmt.Errorf("redisstore: wait %s: %w", key, ctx.Err())
			case <-timer.C:
				break listen
			case note := <-w.notes:
				st, fence, ok := parseNote(note)
				switch {
				case !ok:
					break listen // a reconnect or an unknown note: re-read
				case st == 'd':
					return nil
				case fence < r.Fence:
					continue // an event older than the record we read
				case st != '1':
					return nil // completed, failed or released
				default:
					break listen // taken over: read the new lease
				}
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// parseNote splits "<state>:<fence>".
func parseNote(note string) (state byte, fence uint64, ok bool) {
	st, f, found := strings.Cut(note, ":")
	if !found || len(st) != 1 {
		return 0, 0, false
	}
	n, err := strconv.ParseUint(f, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return st[0], n, true
}
