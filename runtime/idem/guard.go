package idem

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/maphash"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Guard runs functions at most once per key against a Store. It is safe for
// concurrent use; make one per store and share it.
type Guard struct {
	store    Store
	codec    Codec
	obs      Observer
	cobs     ContextObserver // obs, when it takes a ctx
	prefix   string
	failOpen bool
	hmacKey  []byte
	now      func() time.Time

	tokenPrefix [8]byte
	counter     atomic.Uint64
	flights     flightTable
	calls       sync.Pool // *Call
	macs        sync.Pool // *keyedHash (HMAC-SHA-256)
	memo        *keyMemo
	results     *resultMemo
	alarms      alarms  // heartbeats and lease expiries of running calls
	orphans     orphans // claims whose reply was lost, to give back
}

// Option configures a Guard.
type Option func(*Guard)

// WithCodec replaces the default JSON codec for results. It encodes the
// results of calls whose Spec has no Codec of its own (hand-written calls);
// idemgen's wrappers carry their result type's generated codec
// (Spec.Codec), which takes precedence, and the Guard's codec then only
// reads the records such a function wrote before it had one.
func WithCodec(c Codec) Option { return func(g *Guard) { g.codec = c } }

// WithObserver reports every outcome to o.
func WithObserver(o Observer) Option { return func(g *Guard) { g.obs = o } }

// WithKeyPrefix sets the prefix of every store key (default "idem:").
func WithKeyPrefix(p string) Option { return func(g *Guard) { g.prefix = p } }

// WithFailOpen makes a Guard run the function unguarded when the store is
// unavailable, instead of returning ErrStoreUnavailable (the default,
// fail closed). Use it only where a duplicate is cheaper than an outage.
func WithFailOpen() Option { return func(g *Guard) { g.failOpen = true } }

// WithHMAC hashes keys and fingerprints with HMAC-SHA-256 under secret, so
// that whoever can read the store cannot confirm a guess of a low-entropy
// input (an email address, an amount) by hashing it. Changing the secret
// changes every key.
func WithHMAC(secret []byte) Option {
	return func(g *Guard) { g.hmacKey = append([]byte(nil), secret...) }
}

// WithGuardClock replaces the Guard's clock, which it uses only to time calls
// and to notice that heartbeats have failed for a whole lease. Leases are
// judged by the store's clock; tests inject skewed clocks here to show
// that a process's wrong clock cannot break exclusivity.
func WithGuardClock(now func() time.Time) Option { return func(g *Guard) { g.now = now } }

// WithKeyMemo sets how many recently derived keys a Guard remembers
// (default 4096; 0 turns it off). A duplicate repeats its key material, so
// a remembered key spares it the SHA-256; the memo holds key material of
// up to 1 KiB per entry in process memory, never in the store. The same
// setting sizes the memo of decoded replay results: a replay whose stored
// bytes equal the ones decoded last time for its key gets that value
// without running the codec, for result types a copy fully isolates (no
// pointers, slices, maps or interfaces inside), up to 2 KiB of stored
// bytes per entry.
func WithKeyMemo(entries int) Option {
	return func(g *Guard) { g.memo, g.results = newKeyMemo(entries), newResultMemo(entries/4) }
}

// monoBase is the origin of the process's monotonic readings: Guards time
// leases as time.Since(monoBase), and the memory store's default clock is
// monoNow, so the two can share one reading.
var monoBase = time.Now()

// monoNow is the current time on the monotonic clock alone.
func monoNow() time.Time { return monoBase.Add(time.Since(monoBase)) }

// NewGuard returns a Guard over store.
func NewGuard(store Store, opts ...Option) *Guard {
	g := &Guard{store: store, codec: JSONCodec{}, prefix: "idem:", now: time.Now, memo: newKeyMemo(4096), results: newResultMemo(1024)}
	for _, o := range opts {
		o(g)
	}
	g.cobs, _ = g.obs.(ContextObserver)
	if _, err := rand.Read(g.tokenPrefix[:]); err != nil {
		panic("idem: no randomness for owner tokens: " + err.Error())
	}
	g.calls.New = func() any { return &Call{g: g} }
	g.macs.New = func() any { return &keyedHash{h: hmac.New(sha256.New, g.hmacKey)} }
	g.flights.init()
	return g
}

// Store returns the guard's store.
func (g *Guard) Store() Store { return g.store }

// token mints a unique owner token without allocating.
func (g *Guard) token() (t Token) {
	copy(t[:8], g.tokenPrefix[:])
	binary.BigEndian.PutUint64(t[8:], g.counter.Add(1))
	return t
}

func (g *Guard) observe(ctx context.Context, e Event) {
	if g.cobs != nil {
		g.cobs.ObserveContext(ctx, e)
	} else if g.obs != nil {
		g.obs.Observe(e)
	}
}

// Call holds the key material of one guarded call while generated code
// writes it. Get one from Guard.Begin, write the key, and hand it to Do,
// which returns it to a pool: do not use it after Do.
type Call struct {
	g          *Guard
	spec       *Spec
	key        KeyBuilder
	payload    KeyBuilder
	hasPayload bool
	entity     KeyBuilder
	at         time.Time
	scratch    []byte
	raw        []byte // memo lookup key
}

// Begin starts a call of the function described by spec.
func (g *Guard) Begin(spec *Spec) *Call {
	c := g.calls.Get().(*Call)
	c.spec = spec
	return c
}

// Key is the builder for the idempotency key: the key= paths, or every
// parameter but the context when key= is not given.
func (c *Call) Key() *KeyBuilder { return &c.key }

// Payload is the builder for the full payload when key= names a subset of
// it. A later call with the same key and another payload gets
// ErrPayloadMismatch. Without it the key is the fingerprint.
func (c *Call) Payload() *KeyBuilder {
	c.hasPayload = true
	return &c.payload
}

// Entity is the builder for the entity of an ordered function (order=):
// events of one entity are accepted in time order.
func (c *Call) Entity() *KeyBuilder { return &c.entity }

// At sets the event time of an ordered function's call.
func (c *Call) At(t time.Time) { c.at = t }

// finish hashes the key material, builds the store key into st (key,
// fingerprint, order claim) and returns c to the pool. Filling st in place
// spares a replay copying them through returns and arguments.
func (c *Call) finish(st *state) (err error) {
	g, spec := c.g, c.spec
	if err = c.key.err; err == nil && c.hasPayload {
		err = c.payload.err
	}
	if err == nil && spec.Ordered {
		err = c.entity.err
	}
	if err == nil && g.memo != nil && !spec.Ordered && !c.key.flushed && !c.payload.flushed {
		// A replay repeats its key material: look the derived key up
		// instead of hashing again.
		raw := c.memoRaw()
		if e, ok := g.memo.get(raw); ok {
			st.key, st.fp = e.key, e.fp
		} else {
			st.key, st.fp = c.derive(&st.order)
			g.memo.put(raw, st.key, st.fp)
		}
	} else if err == nil {
		st.key, st.fp = c.derive(&st.order)
	}
	c.key.reset()
	c.payload.reset()
	c.entity.reset()
	c.hasPayload = false
	c.at = time.Time{}
	c.spec = nil
	g.calls.Put(c)
	return err
}

// memoRaw lays out what identifies a derived key: the function and
// version, then the key material, then the payload material.
func (c *Call) memoRaw() []byte {
	b := binary.AppendUvarint(c.raw[:0], uint64(len(c.spec.Name)))
	b = append(b, c.spec.Name...)
	b = binary.AppendVarint(b, int64(c.spec.Version))
	b = binary.AppendUvarint(b, uint64(len(c.key.buf)))
	b = append(b, c.key.buf...)
	if c.hasPayload {
		b = append(b, 1)
		b = append(b, c.payload.buf...)
	}
	c.raw = b
	return b
}

// derive hashes the key material and builds the store key.
func (c *Call) derive(order *OrderClaim) (key string, fp Fingerprint) {
	g, spec := c.g, c.spec
	kh := g.mac(c.key.sum())
	fp = Fingerprint(kh)
	if c.hasPayload {
		fp = Fingerprint(g.mac(c.payload.sum()))
	}
	b := append(c.scratch[:0], g.prefix...)
	b = append(b, spec.Name...)
	b = append(b, ":v"...)
	b = strconv.AppendInt(b, int64(spec.Version), 10)
	b = append(b, ':')
	if spec.Ordered {
		// "{entity}" is a hash tag: the call's record and its
		// entity's order record land in one Redis Cluster slot.
		eh := g.mac(c.entity.sum())
		b = append(b, '{')
		b = hex.AppendEncode(b, eh[:])
		b = append(b, '}')
		*order = OrderClaim{Key: string(b), At: c.at, Grace: spec.Grace}
		b = append(b, ':')
	}
	b = hex.AppendEncode(b, kh[:])
	key = string(b)
	c.scratch = b
	return key, fp
}

func (g *Guard) mac(sum [32]byte) [32]byte {
	if g.hmacKey == nil {
		return sum
	}
	m := g.macs.Get().(*keyedHash)
	m.in = sum // hashing a field, not the parameter, keeps sum off the heap
	m.h.Reset()
	m.h.Write(m.in[:])
	m.h.Sum(m.out[:0])
	sum = m.out
	g.macs.Put(m)
	return sum
}

// keyedHash is a pooled HMAC with its output buffer, so keyed hashing
// does not allocate per call.
type keyedHash struct {
	h       hash.Hash
	in, out [32]byte
}

// flightTable tracks the calls this process is executing, so same-key
// callers in the process are answered without asking the store.
type flightTable struct {
	// active counts running flights: while none run, which is the common
	// case for a replay, get skips the lookup altogether.
	active atomic.Int64
	shards [32]struct {
		mu sync.RWMutex
		m  map[string]*flight
	}
}

type flight struct {
	fp   Fingerprint
	done chan struct{}
	// Set before done is closed. shared: value and err are the recorded
	// outcome and may be handed to waiting duplicates.
	shared bool
	value  any
	err    error
}

func (t *flightTable) init() {
	for i := range t.shards {
		t.shards[i].m = make(map[string]*flight)
	}
}

func (t *flightTable) shard(key string) int { return int(tailHash(key) % uint32(len(t.shards))) }

// tailHash hashes the last 32 bytes of a key (with the runtime's AES-based
// map hash). Guard keys end in the hex of a SHA-256, so their tails are
// already uniform, and other keys mostly differ at the end; hashing whole
// keys cost a replay more than its map lookups.
func tailHash(key string) uint32 {
	return uint32(maphash.String(shardSeed, key[len(key)-min(len(key), 32):]))
}

// shardSeed seeds tailHash: shard choice is per process and never stored.
var shardSeed = maphash.MakeSeed()

func (t *flightTable) get(key string) *flight {
	if t.active.Load() == 0 {
		return nil
	}
	s := &t.shards[t.shard(key)]
	s.mu.RLock()
	f := s.m[key]
	s.mu.RUnlock()
	return f
}

func (t *flightTable) add(key string, fp Fingerprint) *flight {
	f := &flight{fp: fp, done: make(chan struct{})}
	s := &t.shards[t.shard(key)]
	t.active.Add(1)
	s.mu.Lock()
	s.m[key] = f
	s.mu.Unlock()
	return f
}

func (t *flightTable) finish(key string, f *flight, shared bool, value any, err error) {
	s := &t.shards[t.shard(key)]
	s.mu.Lock()
	if s.m[key] == f {
		delete(s.m, key)
	}
	s.mu.Unlock()
	t.active.Add(-1)
	f.shared, f.value, f.err = shared, value, err
	close(f.done)
}

// StoreKey finishes c without running anything and returns the store key
// Do would claim for it: the Guard's prefix, the Spec's name and version,
// the key material hashed (with the Guard's HMAC secret, if any) and, for
// an ordered function, its entity. Operators and tools use it to find or
// delete a call's record; idemgen's wrappers have a Key helper per
// function (CreateInvoiceKey for CreateInvoice) that calls it. The error
// is the one Do would return before running anything (invalid key
// material: ErrInvalidKey). c goes back to the pool, as after Do: do not
// use it afterwards.
func (c *Call) StoreKey() (string, error) {
	name := c.spec.Name // finish clears c.spec
	key, err := KeyOf(c)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return key, nil
}

// KeyOf finishes c without running anything and returns the store key the
// call would use, so tests and tools can find a call's record. c goes back
// to the pool: do not use it afterwards. Unlike c.StoreKey, its error does
// not name the function.
func KeyOf(c *Call) (string, error) {
	var st state
	err := c.finish(&st)
	return st.key, err
}

type overrideKey struct{}

// AllowOutOfOrder returns a ctx under which an ordered function accepts
// one out-of-order event: an administrator's override. The Guard reports it
// to the Observer (OutcomeOverride with the reason), so audit sinks record it.
func AllowOutOfOrder(ctx context.Context, reason string) context.Context {
	return context.WithValue(ctx, overrideKey{}, reason)
}

func overrideFrom(ctx context.Context) (string, bool) {
	r, ok := ctx.Value(overrideKey{}).(string)
	return r, ok
}

// keyMemo is a direct-mapped cache from key material to derived keys: a
// power-of-two array of slots, each holding an immutable entry behind an
// atomic pointer. A lookup is one hash and one load, with no lock; a new
// entry replaces whatever shared its slot. Bounded by construction.
type keyMemo struct{ directMap[memoEntry] }

type memoEntry struct {
	raw string // the key material, compared on lookup
	key string
	fp  Fingerprint
}

// maxMemoRaw bounds the key material one memo entry may hold.
const maxMemoRaw = 1024

func newKeyMemo(entries int) *keyMemo {
	if entries <= 0 {
		return nil
	}
	return &keyMemo{newDirectMap[memoEntry](entries)}
}

// directMap is the slot array of a direct-mapped memo: a power of two of
// atomic pointers to immutable entries, indexed by a hash.
type directMap[E any] struct {
	mask  uint64
	slots []atomic.Pointer[E]
}

func newDirectMap[E any](entries int) directMap[E] {
	n := 1
	for n < entries {
		n <<= 1
	}
	return directMap[E]{mask: uint64(n - 1), slots: make([]atomic.Pointer[E], n)}
}

func (d *directMap[E]) at(h uint64) *atomic.Pointer[E] { return &d.slots[h&d.mask] }

func (m *keyMemo) slot(raw []byte) *atomic.Pointer[memoEntry] {
	return m.at(maphash.Bytes(shardSeed, raw))
}

func (m *keyMemo) get(raw []byte) (*memoEntry, bool) {
	if len(raw) > maxMemoRaw {
		return nil, false
	}
	e := m.slot(raw).Load()
	return e, e != nil && e.raw == string(raw)
}

func (m *keyMemo) put(raw []byte, key string, fp Fingerprint) {
	if len(raw) > maxMemoRaw {
		return
	}
	m.slot(raw).Store(&memoEntry{raw: string(raw), key: key, fp: fp})
}
