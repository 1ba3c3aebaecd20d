package idem

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"unicode/utf8"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/impl"
)

// Call is one guarded call: Guard.Begin (or, for generated code,
// impl.Begin) starts it, and Do (or StoreKey) finishes it. A Call is
// a small value and is used once: once it is
// finished, Do and StoreKey return an error for it (and for any copy). The
// memory its key material is written into is the Guard's, pooled; a
// finished Call can no longer reach it, so keeping one cannot touch
// another call's key. The zero Call is finished. A Call is not safe for
// concurrent use.
type Call struct {
	s   *callState
	gen uint64 // s's generation when this Call began
}

// callState is the pooled working memory of calls, pooled for speed
// (docs/BENCHMARKS.md, "What each speed mechanism earns"). gen counts its uses:
// a Call whose gen differs began in an earlier use and is finished. Only
// gen is read by a Call that may be finished, atomically, so a stale Call
// never races with the state's new user.
type callState struct {
	gen     atomic.Uint64
	g       *Guard
	spec    *Spec
	m       impl.Material
	scratch []byte
	raw     []byte // memo lookup key
	// tokens left of the block this state took from the Guard's counter
	// (next up to end): one locked add per tokenBlock calls rather than
	// one a call; its gain is in docs/BENCHMARKS.md, "What each speed
	// mechanism earns".
	next, end uint64
}

// tokenBlock is how many owner tokens a call state takes at once.
const tokenBlock = 256

// token mints the call's owner token, unique in its Guard.
func (c *callState) token() idemstore.Token {
	if c.next == c.end {
		c.end = c.g.counter.Add(tokenBlock)
		c.next = c.end - tokenBlock
	}
	c.next++
	return c.g.tokenOf(c.next)
}

// errCallFinished is returned for a Call handed to Do or StoreKey after
// it was finished (a second time, or a copy of a finished one).
var errCallFinished = errors.New("idem: call already finished (a Call is used once)")

// Begin starts a hand-written call of the function spec describes, with
// the idempotency key key, and keys it as a generated wrapper keys a
// parameter of key's type: a string, []byte, bool or builtin number as
// its value alone (so Begin(&spec, id) and a wrapper annotated key=id
// of the same name and version share their records), anything else as
// a Keyer's IdemKey value is (a []any of them, a Keyer, a time.Time, a
// named type by its type and value, ...). Hand the Call to Do or
// StoreKey. Generated wrappers start theirs through runtime/idemimpl
// instead, which writes the key field by field without boxing it; an
// ordered function's call (Spec.Ordered) needs that too.
func (g *Guard) Begin(spec *Spec, key any) Call {
	c, m := g.begin(spec)
	if k := m.Key(); !k.Predeclared(key) {
		k.Any(key)
	}
	return c
}

// begin starts a call: the caller writes its key into the returned
// Material, then hands the Call to Do or StoreKey; the Material is not
// written after that. impl.Begin reaches it through impl.BeginCall.
func (g *Guard) begin(spec *Spec) (Call, *impl.Material) {
	s := g.calls.Get().(*callState)
	s.spec = spec
	return Call{s: s, gen: s.gen.Load()}, &s.m
}

func init() { impl.BeginCall = (*Guard).begin }

// live returns c's state, or nil once c is finished.
func (c Call) live() *callState {
	if c.s == nil || c.s.gen.Load() != c.gen {
		return nil
	}
	return c.s
}

// finish is callState.finish for a Call that is still live.
func (c Call) finish(st *state) error {
	s := c.live()
	if s == nil {
		return errCallFinished
	}
	return s.finish(st)
}

// finish hashes the key material, builds the store key into st (key,
// fingerprint, order claim) and hands c's buffers back to the pool.
// Filling st in place spares a replay copying them through returns and
// arguments.
func (c *callState) finish(st *state) (err error) {
	g, spec := c.g, c.spec
	st.g, st.spec = g, spec
	st.owner = c.token()
	key, payload, entity, hasPayload, _ := c.m.Parts()
	if err = spec.claimName(); err == nil {
		err = key.Err()
	}
	if err == nil && hasPayload {
		err = payload.Err()
	}
	if err == nil && spec.Ordered {
		err = entity.Err()
	}
	_, keyWhole := key.Material()
	_, payloadWhole := payload.Material()
	if err == nil && g.memo != nil && !spec.Ordered && keyWhole && payloadWhole {
		// A replay repeats its key material: look the derived key up
		// instead of hashing again.
		raw := c.memoRaw()
		if e, ok := g.memo.get(raw); ok {
			st.key, st.fp = e.key, e.fp
			st.memo, st.rec = e, e.rec.Load()
		} else if err = checkNames(g, spec); err == nil {
			// Remembered only if the key turns out to repeat (see
			// state.release): most first executions' keys never do, and
			// the entry would cost each of them an allocation.
			st.key, st.fp = c.derive(&st.order)
			st.unmemoized = c
		}
	} else if err == nil {
		if err = checkNames(g, spec); err == nil {
			st.key, st.fp = c.derive(&st.order)
		}
	}
	c.m.Reset()
	c.spec = nil
	c.gen.Add(1) // every Call of this use is finished now
	if st.unmemoized != c {
		g.calls.Put(c)
	} // else st.release hands c back, once it has read c.raw
	return err
}

// checkNames refuses a function name or key prefix that is not valid
// UTF-8: stores that keep keys as text would turn the bytes into U+FFFD
// (DynamoDB) or refuse them (PostgreSQL), so two names could share one
// key space. Checked when a key is derived; a memoized key was checked
// when it was derived.
func checkNames(g *Guard, spec *Spec) error {
	if !utf8.ValidString(spec.Name) {
		return fmt.Errorf("%w: the function name %.64q is not valid UTF-8", ErrInvalidKey, spec.Name)
	}
	if !utf8.ValidString(g.prefix) {
		return fmt.Errorf("%w: the key prefix %.64q is not valid UTF-8", ErrInvalidKey, g.prefix)
	}
	return nil
}

// release ends st's hold on the call state whose key the memo missed:
// it remembers the key if the call found it already claimed (a
// duplicate: the key repeats, and its next replay skips hashing), and
// hands the state back to the pool.
func (st *state) release() {
	c := st.unmemoized
	if c == nil {
		return
	}
	st.unmemoized = nil
	if st.repeat {
		st.g.memo.put(c.raw, st.key, st.fp, st.rec)
	}
	st.g.calls.Put(c)
}

// memoRaw lays out what identifies a derived key: the function and
// version, then the key material, then the payload material.
func (c *callState) memoRaw() []byte {
	b := binary.AppendUvarint(c.raw[:0], uint64(len(c.spec.Name)))
	b = append(b, c.spec.Name...)
	b = binary.AppendVarint(b, int64(c.spec.Version))
	kb, pb, _, hasPayload, _ := c.m.Parts()
	key, _ := kb.Material()
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	if hasPayload {
		payload, _ := pb.Material()
		b = append(b, 1)
		b = append(b, payload...)
	}
	c.raw = b
	return b
}

// derive hashes the key material and builds the store key.
func (c *callState) derive(order *idemstore.OrderClaim) (key string, fp idemstore.Fingerprint) {
	b, fp := c.deriveBytes(order)
	return string(b), fp
}

// deriveBytes is derive with the key left in c's scratch buffer, valid
// until c's next use.
func (c *callState) deriveBytes(order *idemstore.OrderClaim) (key []byte, fp idemstore.Fingerprint) {
	g, spec := c.g, c.spec
	kb, pb, eb, hasPayload, at := c.m.Parts()
	kh := g.mac(kb.Sum())
	fp = idemstore.Fingerprint(kh)
	if hasPayload {
		fp = idemstore.Fingerprint(g.mac(pb.Sum()))
	}
	b := append(c.scratch[:0], g.prefix...)
	b = append(b, spec.Name...)
	b = append(b, ":v"...)
	b = strconv.AppendInt(b, int64(spec.Version), 10)
	b = append(b, ':')
	if spec.Ordered {
		// "{entity}" is a hash tag: the call's record and its
		// entity's order record land in one Redis Cluster slot.
		eh := g.mac(eb.Sum())
		b = append(b, '{')
		b = hex.AppendEncode(b, eh[:])
		b = append(b, '}')
		*order = idemstore.OrderClaim{Key: string(b), At: at, Grace: spec.Grace}
		b = append(b, ':')
	}
	b = hex.AppendEncode(b, kh[:])
	c.scratch = b
	return b, fp
}

// mac is sum keyed with the Guard's HMAC secret, sum itself without one.
func (g *Guard) mac(sum [32]byte) [32]byte {
	if g.hmacKey == nil {
		return sum
	}
	return keyed(g.hmacKey, sum)
}

// keyed is HMAC-SHA-256(secret, sum). Apart from mac, so that only keyed
// sums are moved to the heap.
func keyed(secret []byte, sum [32]byte) [32]byte {
	h := hmac.New(sha256.New, secret)
	h.Write(sum[:])
	return [32]byte(h.Sum(nil))
}

// StoreKey finishes c without running anything and returns the store key
// Do would claim for it: the Guard's prefix, the Spec's name and version,
// the key material hashed (with the Guard's HMAC secret, if any) and, for
// an ordered function, its entity. Operators and tools use it to find or
// delete a call's record; idemgen's wrappers have a Key helper per
// function (CreateInvoiceKey for CreateInvoice) that calls it. The error
// is the one Do would return before running anything (invalid key
// material: ErrInvalidKey). It finishes c, as Do does.
func (c Call) StoreKey() (string, error) {
	s := c.live()
	if s == nil {
		return "", errCallFinished
	}
	name := s.spec.Name
	var st state
	err := c.finish(&st)
	st.release()
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return st.key, nil
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
