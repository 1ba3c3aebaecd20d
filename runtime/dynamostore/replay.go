package dynamostore

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemgen/idemgen/runtime/idem"
)

// A replay is answered by a read. A claim of a key the hint (recent)
// names first runs a consistent GetItem;
// when it finds the key's live record completed or failed with the
// claim's fingerprint, that record is the answer: one read unit (4 KB),
// where the claim's conditional UpdateItem, failing, is billed a write
// unit. Anything else (no item, past its retention, released, in
// progress, another fingerprint, an item this binary cannot read) goes to
// the claim's UpdateItem, which decides under its condition as it always
// did; an item that changes after the read is the UpdateItem's to handle.
//
// The read goes first only on a hint because on a new key it is a round
// trip and a read unit more for nothing: docs/BENCHMARKS.md has the
// numbers of both.

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

// readMode chooses when a claim reads first: on the hint (the default),
// always or never (benchmarks compare the three).
type readMode int8

const (
	readOnHint readMode = iota
	readAlways
	readNever
)

// readsFirst reports whether a claim of key reads first.
func (s *Store) readsFirst(key string) bool {
	switch s.readFirst {
	case readAlways:
		return true
	case readNever:
		return false
	}
	return s.hint.has(key)
}

// replay answers req from a consistent read when its key holds a live,
// finished record with req's fingerprint; ok is false when the claim's
// UpdateItem must decide.
func (s *Store) replay(ctx context.Context, req idem.ClaimRequest, key map[string]types.AttributeValue) (res idem.ClaimResult, ok bool, err error) {
	item, err := s.getItem(ctx, "claim", req.Key, key)
	if err != nil {
		return idem.ClaimResult{}, false, err
	}
	if item == nil {
		return idem.ClaimResult{}, false, nil
	}
	r, err := decode(req.Key, item)
	if err != nil || r.Fingerprint != req.Fingerprint || !live(&r, s.now()) ||
		(r.State != idem.StateCompleted && r.State != idem.StateFailed) {
		return idem.ClaimResult{}, false, nil
	}
	st := idem.ClaimCompleted
	if r.State == idem.StateFailed {
		st = idem.ClaimFailed
	}
	return idem.ClaimResult{Status: st, Fence: r.Fence, Result: idem.Result{Data: r.Result}}, true, nil
}

// finished updates the replay hint with a finish: a completed or failed
// key's next claim is likely a replay, a released key's is not.
func (s *Store) finished(key string, state idem.State) {
	if state == idem.StateReleased {
		s.hint.drop(key)
	} else {
		s.hint.add(key)
	}
}

// getItem is a consistent GetItem; a nil item means absent.
func (s *Store) getItem(ctx context.Context, op, key string, k map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: s.table, Key: k, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, s.opError(ctx, op, key, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}
