package firestorestore

import (
	"sync"

	"github.com/idemgen/idemgen/runtime/idem"
)

// A replay is answered by a read. By default Claim reads the document
// first, so a replay (a live record completed or failed with the claim's
// fingerprint) is one Get and no write. WithCreateFirst tries a Create
// first, which on a stored key is a write refused: there a claim of a key
// the hint (recent) names reads first, as the default does, and a new key keeps its one-round-trip Create.

// recentKeys is how many keys the hint remembers per store.
const recentKeys = 4096

// recent is the hint that a claim is likely a duplicate: a bounded,
// process-local set of the keys this store finished (completed or
// failed) or found claimed (in progress, completed or failed) lately. A
// release takes its key out; the oldest keys leave first.
type recent struct {
	mu    sync.Mutex
	keys  map[string]struct{}
	order []string
	at    int
}

func (h *recent) has(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.keys[key]
	return ok
}

func (h *recent) add(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.keys[key]; ok {
		return
	}
	if h.keys == nil {
		h.keys, h.order = make(map[string]struct{}, recentKeys), make([]string, recentKeys)
	}
	delete(h.keys, h.order[h.at])
	h.order[h.at], h.keys[key] = key, struct{}{}
	h.at = (h.at + 1) % recentKeys
}

func (h *recent) drop(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.keys, key)
}

// note updates the hint with a claim's answer.
func (h *recent) note(key string, st idem.ClaimStatus) {
	switch st {
	case idem.ClaimInProgress, idem.ClaimCompleted, idem.ClaimFailed:
		h.add(key)
	}
}
