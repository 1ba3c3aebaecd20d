package idem

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// keyMemo is a direct-mapped cache from key material to derived keys: a
// power-of-two array of slots, each holding an entry behind an atomic
// pointer, immutable but for its record handle (atomic too). A lookup is one hash and one load, with no lock; a new
// entry replaces whatever shared its slot. Bounded by construction. It
// spares a replay hashing its key material and allocating its store key
// (docs/BENCHMARKS.md, "What each speed mechanism earns").
type keyMemo struct {
	mask  uint64
	slots []atomic.Pointer[memoEntry]
}

type memoEntry struct {
	raw string // the key material, compared on lookup
	key string
	fp  idemstore.Fingerprint
	// rec is the store's handle on the key's record (recordClaimer), nil
	// until a claim returned one; replaced when the store answers with
	// another record (the key's was dropped and made again).
	rec atomic.Value
}

// maxMemoRaw bounds the key material one memo entry may hold.
const maxMemoRaw = 1024

func newKeyMemo(entries int) *keyMemo {
	if entries <= 0 {
		return nil
	}
	n := 1
	for n < entries {
		n <<= 1
	}
	return &keyMemo{mask: uint64(n - 1), slots: make([]atomic.Pointer[memoEntry], n)}
}

func (m *keyMemo) slot(raw []byte) *atomic.Pointer[memoEntry] {
	return &m.slots[maphash.Bytes(memoSeed, raw)&m.mask]
}

func (m *keyMemo) get(raw []byte) (*memoEntry, bool) {
	if len(raw) > maxMemoRaw {
		return nil, false
	}
	e := m.slot(raw).Load()
	return e, e != nil && e.raw == string(raw)
}

// put remembers key, fp and the store's record handle rec (nil if none)
// for raw (copied).
func (m *keyMemo) put(raw []byte, key string, fp idemstore.Fingerprint, rec any) {
	if len(raw) > maxMemoRaw {
		return
	}
	e := &memoEntry{raw: string(raw), key: key, fp: fp}
	if rec != nil {
		e.rec.Store(rec)
	}
	m.slot(raw).Store(e)
}

// memoSeed seeds the memo's slot hashes: per process, never stored.
var memoSeed = maphash.MakeSeed()
