package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TransactAPI is the part of the DynamoDB client ordered claims use
// besides API. *dynamodb.Client implements it; a store on a client
// wrapper without it does not support ordering (SupportsOrdering is
// false, and a Guard refuses ordered functions on it).
type TransactAPI interface {
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// The order record's attributes (besides state = "order", expires_at and
// the TTL attribute).
const (
	// aLastAt is the entity's last accepted event time, Unix nanoseconds.
	aLastAt = "last_at"
	// aVersion counts the order record's writes: an ordered claim's
	// transaction is conditioned on the version it read.
	aVersion = "version"
)

// SupportsOrdering implements idemstore.Orderer: true when the client has
// TransactWriteItems (*dynamodb.Client does). An ordered claim reads the
// call's record and the entity's order record (two consistent GetItems,
// concurrently), decides in code, and writes both in one
// TransactWriteItems whose conditions pin each item to what was read; see
// the package documentation.
func (s *Store) SupportsOrdering() bool {
	_, ok := s.api.(TransactAPI)
	return ok
}

var _ idemstore.Orderer = (*Store)(nil)

// maxOrderRounds bounds an ordered claim's read-decide-write rounds when
// the items keep changing between the read and the transaction (events of
// one entity racing).
const maxOrderRounds = 16

// orderState is an entity's order record as read.
type orderState struct {
	exists  bool
	last    time.Time
	expires time.Time
	version map[string]types.AttributeValue // the version attribute as read, for the condition
}

func decodeOrder(key string, item map[string]types.AttributeValue) (orderState, error) {
	o := orderState{exists: item != nil}
	if item == nil {
		return o, nil
	}
	bad := func(err error) (orderState, error) {
		return orderState{}, fmt.Errorf("%w: dynamostore: order record %q: %w", idem.ErrCorruptRecord, key, err)
	}
	st, err := attrS(item, aState)
	if err != nil {
		return bad(err)
	}
	if st != stateOrder {
		return bad(fmt.Errorf("state %q, want %q", st, stateOrder))
	}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{aLastAt, &o.last}, {aExpiresAt, &o.expires}} {
		v, err := attrN(item, t.name)
		if err != nil {
			return bad(err)
		}
		ns, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return bad(fmt.Errorf("%s %q is not Unix nanoseconds", t.name, v))
		}
		*t.dst = time.Unix(0, ns)
	}
	if _, err := attrN(item, aVersion); err != nil {
		return bad(err)
	}
	o.version = map[string]types.AttributeValue{":over": item[aVersion]}
	return o, nil
}

// readBoth reads the call's item and the order item concurrently
// (consistent reads); a nil item is absent.
func (s *Store) readBoth(ctx context.Context, key string, k, ok map[string]types.AttributeValue) (rec, ord map[string]types.AttributeValue, err error) {
	var wg sync.WaitGroup
	var oerr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		ord, oerr = s.getItem(ctx, "claim", key, ok)
	}()
	rec, err = s.getItem(ctx, "claim", key, k)
	wg.Wait()
	return rec, ord, errors.Join(err, oerr)
}

// pinCond is the condition that the record item is still as read: absent,
// or with the state, fence, lease, expiry and steps it had. Every write
// to a record changes one of them (a claim or ForceRelease the fence, a
// heartbeat the lease and expiry, a completion, failure or release the
// state, a step the number of steps), so the transaction applies only
// over the very item the claim was decided on.
func pinCond(item map[string]types.AttributeValue, names map[string]string, vals map[string]types.AttributeValue) string {
	if item == nil {
		return "attribute_not_exists(#pk)"
	}
	cond := "#st = :pst AND #fe = :pfe AND #lu = :plu AND #ex = :pex"
	vals[":pst"], vals[":pfe"], vals[":plu"], vals[":pex"] = item[aState], item[aFence], item[aLeaseUntil], item[aExpiresAt]
	if m, ok := item[aSteps].(*types.AttributeValueMemberM); ok {
		cond += " AND size(#sp) = :psp"
		vals[":psp"] = &types.AttributeValueMemberN{Value: strconv.Itoa(len(m.Value))}
	} else {
		cond += " AND attribute_not_exists(#sp)"
	}
	return cond
}

// claimOrdered is Claim with req.Order: see SupportsOrdering. The order is
// looked at only when the claim would make the caller the owner, as
// idemstore.OrderClaim requires.
func (s *Store) claimOrdered(ctx context.Context, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	tx, ok := s.api.(TransactAPI)
	if !ok {
		return idemstore.ClaimResult{}, fmt.Errorf("dynamostore: an ordered claim needs TransactWriteItems, which the client (%T) does not have", s.api)
	}
	if err := s.checkKey(req.Order.Key); err != nil {
		return idemstore.ClaimResult{}, err
	}
	key, okey := s.itemKey(req.Key), s.itemKey(req.Order.Key)
	for round := 1; round <= maxOrderRounds; round++ {
		item, oitem, err := s.readBoth(ctx, req.Key, key, okey)
		if err != nil {
			return idemstore.ClaimResult{}, err
		}
		now := s.now()
		var old idemstore.Record
		retained := false
		if item != nil {
			if old, err = decode(req.Key, item); err != nil {
				return idemstore.ClaimResult{}, err
			}
			// The record decides first: a replay, a running call or a
			// mismatch is answered without looking at the order. From the
			// second round on, the item may hold this claim's own
			// transaction, applied on a try whose response was lost
			// (owner tokens are unique per attempt): found says acquired.
			if res, ok := s.found(req, &old, now, round > 1); ok {
				return res, nil
			}
			retained = s.retained(&old, now)
		}
		o, err := decodeOrder(req.Order.Key, oitem)
		if err != nil {
			return idemstore.ClaimResult{}, err
		}
		at := req.Order.At
		live := o.exists && now.Before(o.expires)
		if live && !req.Order.Override && at.Before(o.last.Add(-req.Order.Grace)) {
			return idemstore.ClaimResult{Status: idemstore.ClaimOutOfOrder, Fence: old.Fence, LastAccepted: o.last}, nil
		}
		advance := !live || !o.last.After(at) // last only ever moves forward

		lu := now.Add(req.Lease)
		_, err = tx.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Update: s.recordUpdate(req, key, item, retained, now, lu)},
			{Update: s.orderUpdate(req, okey, o, now, advance)},
		}})
		if err == nil {
			return s.acquiredFrom(req, item, &old, retained, now, lu), nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) || !retryable(tce) {
			return idemstore.ClaimResult{}, s.opError(ctx, "claim", req.Key, err)
		}
		// One of the items changed after the read (or the transaction met
		// another): read again and decide again.
	}
	return idemstore.ClaimResult{}, fmt.Errorf("%w: dynamostore: ordered claim %q: the items kept changing under %d attempts",
		idem.ErrStoreUnavailable, req.Key, maxOrderRounds)
}

// recordUpdate is an ordered claim's update of the record item: the
// claim's (claimSet keeps a retained record's steps, claimAnewSet drops a
// dead one's), on the condition that the item is as read.
func (s *Store) recordUpdate(req idemstore.ClaimRequest, key, item map[string]types.AttributeValue, retained bool, now, lu time.Time) *types.Update {
	ex := lu.Add(req.TTL)
	rvals := claimValues(req, now, lu, ex, s)
	for _, v := range []string{":rel", ":tko"} {
		delete(rvals, v) // DynamoDB refuses values an expression does not use
	}
	set := claimSet
	if item != nil && !retained {
		set = claimAnewSet
	}
	rnames := map[string]string{"#pk": s.layout.pk, "#st": aState, "#ow": aOwner, "#fe": aFence, "#fp": aFP,
		"#res": aResult, "#lu": aLeaseUntil, "#ex": aExpiresAt, "#up": aUpdatedAt, "#ca": aClaimedAt,
		"#ttl": s.layout.ttl, "#sp": aSteps}
	rcond := pinCond(item, rnames, rvals)
	return &types.Update{
		TableName: s.table, Key: key,
		UpdateExpression: aws.String(set), ConditionExpression: aws.String(rcond),
		ExpressionAttributeNames: usedNames(rnames, set, rcond), ExpressionAttributeValues: rvals,
	}
}

// orderUpdate is an ordered claim's update of the order item: made, or
// advanced to At, or (an accepted event older than the last) only its
// expiry renewed; on the condition that it is as read (absent, or at its
// version).
func (s *Store) orderUpdate(req idemstore.ClaimRequest, okey map[string]types.AttributeValue, o orderState, now time.Time, advance bool) *types.Update {
	oex := now.Add(max(req.TTL, req.Lease))
	onames := map[string]string{"#st": aState, "#ex": aExpiresAt, "#ttl": s.layout.ttl, "#ver": aVersion}
	ovals := map[string]types.AttributeValue{":ex": nanos(oex), ":ttl": s.ttlAttr(oex), ":one": avOne}
	ocond := "#ver = :over"
	oset := "SET #ex = :ex, #ttl = :ttl, #ver = #ver + :one"
	if o.exists {
		ovals[":over"] = o.version[":over"]
	} else {
		ocond = "attribute_not_exists(#pk)"
		onames["#pk"] = s.layout.pk
		oset = "SET #st = :order, #ex = :ex, #ttl = :ttl, #ver = :one"
		ovals[":order"] = &types.AttributeValueMemberS{Value: stateOrder}
	}
	if advance {
		oset += ", #last = :at"
		onames["#last"] = aLastAt
		ovals[":at"] = nanos(req.Order.At)
	}
	return &types.Update{
		TableName: s.table, Key: okey,
		UpdateExpression: aws.String(oset), ConditionExpression: aws.String(ocond),
		ExpressionAttributeNames: usedNames(onames, oset, ocond), ExpressionAttributeValues: ovals,
	}
}

// retryable reports whether a canceled transaction failed only on its
// conditions or on a conflict with another transaction: the items
// changed, and reading them again decides anew. Anything else (throttling,
// validation) is the store's error.
func retryable(tce *types.TransactionCanceledException) bool {
	for _, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case "", "None", "ConditionalCheckFailed", "TransactionConflict":
		default:
			return false
		}
	}
	return true
}

// usedNames drops the names neither expression uses (DynamoDB refuses
// them).
func usedNames(names map[string]string, exprs ...string) map[string]string {
	out := make(map[string]string, len(names))
	for k, v := range names {
		for _, e := range exprs {
			if containsName(e, k) {
				out[k] = v
				break
			}
		}
	}
	return out
}

// containsName reports whether expr uses the placeholder name (not as the
// prefix of a longer one).
func containsName(expr, name string) bool {
	for i := 0; i+len(name) <= len(expr); i++ {
		if expr[i:i+len(name)] != name {
			continue
		}
		j := i + len(name)
		if j == len(expr) || !isNameChar(expr[j]) {
			return true
		}
	}
	return false
}

func isNameChar(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// acquiredFrom is the result of an ordered claim's transaction, from the
// item it was conditioned on (nil: absent).
func (s *Store) acquiredFrom(req idemstore.ClaimRequest, item map[string]types.AttributeValue, old *idemstore.Record, retained bool, now, lu time.Time) idemstore.ClaimResult {
	res := idemstore.ClaimResult{Status: idemstore.ClaimAcquired, Fence: 1, LeaseUntil: lu}
	if item == nil {
		return res
	}
	res.Fence = old.Fence + 1
	if retained {
		res.Steps = old.Steps
	}
	if old.State == idemstore.StateInProgress && now.Before(old.ExpiresAt) {
		res.Status = idemstore.ClaimTakenOver
	}
	return res
}
