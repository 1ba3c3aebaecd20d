// Package replayhint is the stores' hint that a claim is likely a
// duplicate, so that it reads before it writes: a bounded, process-local
// set of the keys a store finished (completed or failed) or found claimed
// lately. PostgreSQL, DynamoDB and Firestore use it; docs/BENCHMARKS.md
// ("Replays read") has the measurements behind reading on the hint rather
// than always or never.
package replayhint

import (
	"sync"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Size is how many keys a Recent remembers; the oldest leave first.
const Size = 4096

// Recent is the hint. Its zero value is empty and ready; it is safe for
// concurrent use.
type Recent struct {
	mu    sync.Mutex
	keys  map[string]struct{}
	order []string
	at    int
}

// Has reports whether key is in the hint.
func (h *Recent) Has(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.keys[key]
	return ok
}

// Add puts key in the hint, evicting the oldest past Size.
func (h *Recent) Add(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.keys[key]; ok {
		return
	}
	if h.keys == nil {
		h.keys, h.order = make(map[string]struct{}, Size), make([]string, Size)
	}
	delete(h.keys, h.order[h.at])
	h.order[h.at], h.keys[key] = key, struct{}{}
	h.at = (h.at + 1) % Size
}

// Drop takes key out: its next claim is likely a new run (a release, a
// delete, a forced release).
func (h *Recent) Drop(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.keys, key)
}

// Note updates the hint with a claim's answer: a key found running or
// finished is likely to be claimed again by a duplicate.
func (h *Recent) Note(key string, st idemstore.ClaimStatus) {
	switch st {
	case idemstore.ClaimInProgress, idemstore.ClaimCompleted, idemstore.ClaimFailed:
		h.Add(key)
	}
}

// Mode chooses when a claim reads first: on the hint (the default),
// always or never (the stores' benchmarks compare the three).
type Mode int8

const (
	// OnHint reads first when the hint has the key.
	OnHint Mode = iota
	// Always reads first.
	Always
	// Never reads first: the claim's write decides alone.
	Never
)

// ReadsFirst reports whether a claim of key reads first under m.
func (m Mode) ReadsFirst(h *Recent, key string) bool {
	switch m {
	case Always:
		return true
	case Never:
		return false
	}
	return h.Has(key)
}
