package idem

import (
	"time"
)

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
// It covers an unavailable store only: a key the store can never hold
// (ErrInvalidKey) and a record it cannot read (ErrCorruptRecord) fail
// closed whatever the mode, since they would fail the same way on every
// call.
func WithFailOpen() Option { return func(g *Guard) { g.failOpen = true } }

// WithHMAC hashes keys and fingerprints with HMAC-SHA-256 under secret, so
// that whoever can read the store cannot confirm a guess of a low-entropy
// input (an email address, an amount) by hashing it. Changing the secret
// changes every key.
func WithHMAC(secret []byte) Option {
	return func(g *Guard) { g.hmacKey = append([]byte(nil), secret...) }
}

// WithGuardClock replaces the Guard's clock, which it uses only to time calls
// for observers. Leases are judged by the store's clock (for the memory
// store, WithMemoryClock); tests inject skewed clocks here to show
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
