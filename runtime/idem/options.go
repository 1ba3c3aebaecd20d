package idem

import (
	"time"
)

// Option configures a Guard.
type Option func(*config)

// config is what the Options of NewGuard set.
type config struct {
	codec       Codec
	obs         Observer
	prefix      string
	failOpen    bool
	hmacKey     []byte
	now         func() time.Time
	memo        int // entries of the key memo; 0: none
	maxRes      int
	sealer      Sealer
	compressMin int
}

// WithCodec replaces the default JSON codec for results. It encodes the
// results of calls whose Spec has no Codec of its own (hand-written calls);
// idemgen's wrappers carry their result type's generated codec
// (Spec.Codec), which takes precedence, and the Guard's codec then only
// reads the records such a function wrote before it had one.
func WithCodec(c Codec) Option { return func(cf *config) { cf.codec = c } }

// WithObserver reports every outcome to o.
func WithObserver(o Observer) Option { return func(c *config) { c.obs = o } }

// WithKeyPrefix sets the prefix of every store key (default "idem:").
func WithKeyPrefix(p string) Option { return func(c *config) { c.prefix = p } }

// WithFailOpen makes a Guard run the function unguarded when the store is
// unavailable, instead of returning ErrStoreUnavailable (the default,
// fail closed). Use it only where a duplicate is cheaper than an outage.
// It covers an unavailable store only: a key the store can never hold
// (ErrInvalidKey) and a record it cannot read (ErrCorruptRecord) fail
// closed whatever the mode, since they would fail the same way on every
// call.
func WithFailOpen() Option { return func(c *config) { c.failOpen = true } }

// WithHMAC hashes keys and fingerprints with HMAC-SHA-256 under secret, so
// that whoever can read the store cannot confirm a guess of a low-entropy
// input (an email address, an amount) by hashing it. Changing the secret
// changes every key.
func WithHMAC(secret []byte) Option {
	return func(c *config) { c.hmacKey = append([]byte(nil), secret...) }
}

// WithMaxResult is the largest record, in bytes, that a function whose Spec
// sets no MaxResult may store (Spec.MaxResult says what happens over it).
// Default: no budget but the store's own limit (docs/RUNTIME.md lists
// them).
func WithMaxResult(bytes int) Option { return func(c *config) { c.maxRes = bytes } }

// WithClock replaces the Guard's clock, which it uses only to time calls
// for observers. Leases are judged by the store's clock (for the memory
// store, memstore.WithClock); tests inject skewed clocks here to show
// that a process's wrong clock cannot break exclusivity.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }
