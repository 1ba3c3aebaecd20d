package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
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

// replay answers req from a consistent read when its key holds a live,
// finished record with req's fingerprint; ok is false when the claim's
// UpdateItem must decide.
func (s *Store) replay(ctx context.Context, req idemstore.ClaimRequest, key map[string]types.AttributeValue) (res idemstore.ClaimResult, ok bool, err error) {
	item, err := s.getItem(ctx, "claim", req.Key, key)
	if err != nil {
		return idemstore.ClaimResult{}, false, err
	}
	if item == nil {
		return idemstore.ClaimResult{}, false, nil
	}
	r, err := decode(req.Key, item)
	if err != nil || r.Fingerprint != req.Fingerprint || !live(&r, s.now()) ||
		(r.State != idemstore.StateCompleted && r.State != idemstore.StateFailed) {
		return idemstore.ClaimResult{}, false, nil
	}
	st := idemstore.ClaimCompleted
	if r.State == idemstore.StateFailed {
		st = idemstore.ClaimFailed
	}
	return idemstore.ClaimResult{Status: st, Fence: r.Fence, Result: idemstore.Result{Data: r.Result}}, true, nil
}

// finished updates the replay hint with a finish: a completed or failed
// key's next claim is likely a replay, a released key's is not.
func (s *Store) finished(key string, state idemstore.State) {
	if state == idemstore.StateReleased {
		s.hint.Drop(key)
	} else {
		s.hint.Add(key)
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

// getLive reads key's live record (a consistent read) and the instant it
// was judged live at: ErrNotFound where there is none or it expired.
func (s *Store) getLive(ctx context.Context, op, key string, k map[string]types.AttributeValue) (idemstore.Record, time.Time, error) {
	item, err := s.getItem(ctx, op, key, k)
	if err != nil {
		return idemstore.Record{}, time.Time{}, err
	}
	if item == nil {
		return idemstore.Record{}, time.Time{}, fmt.Errorf("%w: %s", idem.ErrNotFound, key)
	}
	r, err := decode(key, item)
	if err != nil {
		return idemstore.Record{}, time.Time{}, err
	}
	now := s.now()
	if !live(&r, now) {
		return idemstore.Record{}, time.Time{}, fmt.Errorf("%w: %s (expired)", idem.ErrNotFound, key)
	}
	return r, now, nil
}
