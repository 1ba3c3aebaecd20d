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
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/redis/go-redis/v9"
)

// A store's waiters share its pub/sub connections (the hub): each
// waited-on key's channel is subscribed once, reference-counted, and
// unsubscribed when its last waiter leaves. The scripts publish
// "<state>:<fence>" when a key leaves in_progress (or "1:<fence>" on a
// takeover, "d:0" on a delete), so a waiter usually returns without reading
// the record again.
//
// Over a *redis.Client (standalone, Sentinel) the hub holds one connection
// and the scripts PUBLISH. Over a *redis.ClusterClient they SPUBLISH and
// the hub SSUBSCRIBEs (Redis 7.0 sharded pub/sub): a notification then
// stays on the shard that owns the key instead of crossing the cluster bus
// to every node. One SSUBSCRIBE may name channels of one slot only, and
// go-redis re-subscribes a sharded connection's channels in one command to
// the owner of the first one's slot, so the hub keeps one sharded
// connection per slot that has waiters (closed when its last waiter
// leaves): at most as many connections as slots with a live wait.
//
// When a slot moves (resharding, failover) the old owner ends its shard
// subscriptions with an unrequested "sunsubscribe", or the connection
// fails: the hub asks go-redis to reload the slot map, subscribes the
// slot's channels again on a new connection (a MOVED answer is an error
// like any other: reload and retry, with backoff), and wakes the slot's
// waiters, which re-read the record after every re-subscription, so a
// completion published while no one was subscribed is not missed.
//
// Notifications can be lost (a reconnect, a full buffer); a waiter then
// re-reads the record at its poll interval and at the owner's lease expiry,
// and every reconnect wakes the connection's waiters to re-read at once.

// pingEvery is how long the subscription may be silent before the hub
// pings it; a ping unanswered for as long again replaces the connection.
const pingEvery = 5 * time.Second

// classicSlot keys the one connection of a *redis.Client's hub in
// hub.conns; a Cluster's connections are keyed by slot (0-16383).
const classicSlot = -1

type hub struct {
	s       *Store
	cluster *redis.ClusterClient // nil: classic pub/sub
	mu      sync.Mutex
	conns   map[int]*pubConn // by slot; classicSlot for a *redis.Client
	subs    map[string]*subscription
	closed  bool
	done    chan struct{} // closed by close: stops the receive loops' sleeps
	wg      sync.WaitGroup
}

// pubConn is one subscription connection and the channels it carries.
type pubConn struct {
	ps       *redis.PubSub
	slot     int
	channels int
	failures int // consecutive failures, carried over replacements for the backoff
}

type subscription struct {
	slot      int
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
	h := &hub{s: s, conns: make(map[int]*pubConn), subs: make(map[string]*subscription), done: make(chan struct{})}
	h.cluster, _ = s.rdb.(*redis.ClusterClient)
	return h
}

var errClosed = errors.New("redisstore: store closed")

// slotOf is the connection key of channel.
func (h *hub) slotOf(channel string) int {
	if h.cluster == nil {
		return classicSlot
	}
	return keySlot(channel)
}

// subscribe sends the (S)SUBSCRIBE of channels on ps.
func (h *hub) subscribe(ctx context.Context, ps *redis.PubSub, channels ...string) error {
	if h.cluster != nil {
		return ps.SSubscribe(ctx, channels...)
	}
	return ps.Subscribe(ctx, channels...)
}

// newConn makes slot's connection, without dialling: go-redis dials at
// the first (S)SUBSCRIBE, and a sharded connection then goes to the owner
// of the first channel's slot, so its receive loop (go h.run) must start
// only after that call, or it would dial a random node. Called with h.mu.
func (h *hub) newConn(slot, failures int) *pubConn {
	c := &pubConn{slot: slot, failures: failures}
	if h.cluster != nil {
		c.ps = h.cluster.SSubscribe(context.Background())
	} else {
		c.ps = h.s.rdb.Subscribe(context.Background())
	}
	h.conns[slot] = c
	h.wg.Add(1) // for go h.run(c)
	return c
}

// register adds a waiter on channel, subscribing it if it is new.
func (h *hub) register(ctx context.Context, channel string) (*waiter, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errClosed
	}
	sub := h.subs[channel]
	if sub == nil {
		slot := h.slotOf(channel)
		sub = &subscription{slot: slot, waiters: make(map[*waiter]struct{}), ready: make(chan struct{})}
		h.subs[channel] = sub
		// go-redis remembers the channel even when the write fails and
		// subscribes it again on its next connection; until then the
		// waiter polls.
		c := h.conns[slot]
		start := c == nil
		if start {
			c = h.newConn(slot, 0)
		}
		c.channels++
		err := watched(ctx, func() error {
			if start {
				defer func() { go h.run(c) }()
			}
			return h.subscribe(ctx, c.ps, channel)
		})
		if err != nil && ctx.Err() == nil {
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
// that waiter poll. A Cluster slot's connection closes with its last
// channel.
func (h *hub) unregister(ctx context.Context, w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(w.sub.waiters, w)
	if len(w.sub.waiters) > 0 || h.subs[w.channel] != w.sub {
		return
	}
	delete(h.subs, w.channel)
	c := h.conns[w.sub.slot]
	if c == nil || h.closed {
		return
	}
	c.channels--
	if h.cluster != nil && c.channels <= 0 {
		delete(h.conns, c.slot)
		// Close ends its receive loop. In the background: it waits for
		// PubSub's lock, which an abandoned subscribe to a silent node
		// holds until its socket times out.
		go c.ps.Close()
		return
	}
	ps := c.ps
	unsubscribe := func(ctx context.Context) error {
		uctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if h.cluster != nil {
			return ps.SUnsubscribe(uctx, w.channel)
		}
		return ps.Unsubscribe(uctx, w.channel)
	}
	if ctx.Err() != nil {
		go unsubscribe(context.WithoutCancel(ctx)) //nolint:errcheck // best effort, off the caller's path
		return
	}
	_ = watched(ctx, func() error { return unsubscribe(ctx) })
}

// run reads c's subscription until it is closed or replaced.
func (h *hub) run(c *pubConn) {
	defer h.wg.Done()
	ctx := context.Background()
	ps := c.ps
	pinged := false
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
				h.replace(c, "pub/sub connection stopped answering")
				return
			}
			// Notifications may be lost meanwhile, so everyone re-reads.
			h.wake(c)
			failures := h.failed(c)
			select {
			case <-time.After(min(time.Duration(failures)*50*time.Millisecond, time.Second)):
			case <-h.done:
				return
			}
			if h.cluster != nil {
				// The slot may have moved (MOVED, a dead master): subscribe
				// again where the reloaded slot map says it lives.
				h.cluster.ReloadState(ctx)
				h.replace(c, "shard subscription failed: "+err.Error())
				return
			}
			// go-redis reconnects and resubscribes on the next receive.
			continue
		}
		pinged = false
		switch m := msg.(type) {
		case *redis.Message:
			h.resetFailures(c)
			h.notify(m.Channel, m.Payload)
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				h.resetFailures(c)
				h.confirm(m.Channel)
			case "sunsubscribe":
				if h.wanted(c, m.Channel) {
					// Not ours: the server dropped the channel because its
					// slot moved to another node.
					h.cluster.ReloadState(ctx)
					h.replace(c, "shard channel's slot moved")
					return
				}
			}
		}
	}
}

func (h *hub) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

func (h *hub) failed(c *pubConn) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	c.failures++
	return c.failures
}

func (h *hub) resetFailures(c *pubConn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c.failures = 0
}

// wanted reports whether channel is still waited on through c.
func (h *hub) wanted(c *pubConn, channel string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	sub := h.subs[channel]
	return sub != nil && h.conns[sub.slot] == c
}

// replace swaps a failed subscription connection for a new one that
// subscribes every channel of its slot still waited on, and wakes their
// waiters to re-read (the new subscription is confirmed before the
// re-read only when it is quick; a late one wakes them again).
func (h *hub) replace(old *pubConn, why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.conns[old.slot] != old {
		return
	}
	go old.ps.Close() // in the background, as in unregister
	delete(h.conns, old.slot)
	h.s.log.Warn("redisstore: "+why+"; subscribing again", "slot", old.slot)
	var channels []string
	for ch, sub := range h.subs {
		if sub.slot != old.slot {
			continue
		}
		channels = append(channels, ch)
		for w := range sub.waiters {
			poke(w, "")
		}
	}
	if len(channels) == 0 && h.cluster != nil {
		return
	}
	c := h.newConn(old.slot, old.failures)
	c.channels = len(channels)
	if len(channels) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = h.subscribe(ctx, c.ps, channels...)
		cancel()
	}
	go h.run(c)
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

// wake asks every waiter of c's slot to re-read.
func (h *hub) wake(c *pubConn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, sub := range h.subs {
		if sub.slot != c.slot {
			continue
		}
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
	conns := make([]*pubConn, 0, len(h.conns))
	for _, c := range h.conns {
		conns = append(conns, c)
	}
	for _, sub := range h.subs {
		for w := range sub.waiters {
			poke(w, "")
		}
	}
	h.mu.Unlock()
	var err error
	for _, c := range conns {
		if cerr := c.ps.Close(); cerr != nil && !errors.Is(cerr, redis.ErrClosed) && err == nil {
			err = cerr
		}
	}
	h.wg.Wait()
	return err
}

// keySlot is Redis Cluster's hash slot of key: CRC16 (XMODEM) of its hash
// tag, or of the whole key when it has none, modulo 16384.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

// Wait implements idemstore.Store: it returns once key has no live in-progress
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
	var r idemstore.Record
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
		if !found || r.State != idemstore.StateInProgress || !now.Before(r.LeaseUntil) || !now.Before(r.ExpiresAt) {
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
