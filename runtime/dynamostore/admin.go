package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

var _ idemstore.Admin = (*Store)(nil)

// ScanAPI is the part of the DynamoDB client the operator methods (List,
// Cleanup) use besides API. *dynamodb.Client implements it; a client
// wrapper that does not makes those two methods return an error.
type ScanAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// DefaultCleanupLimit is how many items one Cleanup deletes at most
// unless WithCleanupLimit says otherwise.
const DefaultCleanupLimit = 10000

// WithCleanupLimit bounds how many items one Cleanup call deletes
// (default DefaultCleanupLimit); a Cleanup that reaches it returns, and
// the next call carries on.
func WithCleanupLimit(n int) Option { return func(c *config) { c.cleanupLimit = n } }

func (s *Store) scanAPI(op string) (ScanAPI, error) {
	api, ok := s.api.(ScanAPI)
	if !ok {
		return nil, fmt.Errorf("dynamostore: %s needs Scan, which the client (%T) does not have", op, s.api)
	}
	return api, nil
}

// scan calls fn with every item of the store's layout (its key prefix, its
// sort key value) that matches filter, a page at a time (consistent reads).
func (s *Store) scan(ctx context.Context, op, prefix, filter string, names map[string]string,
	vals map[string]types.AttributeValue, fn func(key string, item map[string]types.AttributeValue) error) error {
	api, err := s.scanAPI(op)
	if err != nil {
		return err
	}
	l := s.layout
	conds := []string{}
	if p := l.prefix + prefix; p != "" {
		conds = append(conds, "begins_with(#pk, :prefix)")
		names["#pk"] = l.pk
		vals[":prefix"] = &types.AttributeValueMemberS{Value: p}
	}
	if l.sk != "" {
		conds = append(conds, "#sk = :skv")
		names["#sk"] = l.sk
		vals[":skv"] = &types.AttributeValueMemberS{Value: l.skValue}
	}
	if filter != "" {
		conds = append(conds, filter) // parenthesized by the caller (DynamoDB refuses redundant parentheses)
	}
	in := &dynamodb.ScanInput{TableName: s.table, ConsistentRead: aws.Bool(true)}
	if len(conds) > 0 {
		in.FilterExpression = aws.String(strings.Join(conds, " AND "))
		in.ExpressionAttributeNames = names
		if len(vals) > 0 {
			in.ExpressionAttributeValues = vals
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		out, err := api.Scan(ctx, in)
		if err != nil {
			return s.opError(ctx, op, prefix, err)
		}
		for _, item := range out.Items {
			pk, ok := item[l.pk].(*types.AttributeValueMemberS)
			if !ok || !strings.HasPrefix(pk.Value, l.prefix) {
				continue // not an item of this layout
			}
			if err := fn(strings.TrimPrefix(pk.Value, l.prefix), item); err != nil {
				return err
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// isOrderItem reports whether item is an entity's order record (see
// Claim), which List skips.
func isOrderItem(item map[string]types.AttributeValue) bool {
	st, _ := attrS(item, aState)
	return st == stateOrder
}

// List implements idemstore.Admin: a Scan of the table (consistent reads,
// filtered on the key prefix and, in a single-table layout, the sort key
// value) for the records whose key starts with prefix, live or past their
// retention but not yet deleted, in no particular order. Entity order
// records are not records and are skipped. An item that is not a valid
// record does not stop the listing: List returns an error naming every
// one (wrapping idem.ErrCorruptRecord) at the end, as the other stores
// do. An error from fn stops it at once and is returned. A Scan reads the
// whole table (a filter does not narrow what DynamoDB reads): List is for
// operators, not for a service's hot path.
func (s *Store) List(ctx context.Context, prefix string, fn func(idemstore.Record) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var corrupted []error
	err := s.scan(ctx, "list", prefix, "", map[string]string{}, map[string]types.AttributeValue{},
		func(key string, item map[string]types.AttributeValue) error {
			if isOrderItem(item) {
				return nil
			}
			r, err := decode(key, item)
			if err != nil {
				corrupted = append(corrupted, err)
				return nil
			}
			return fn(r)
		})
	if err != nil {
		return err
	}
	return errors.Join(corrupted...)
}

// ForceRelease implements idemstore.Admin: it releases key whatever its owner,
// clears the owner and bumps the fence, so a still-running owner can
// neither heartbeat nor complete, and the next claim with the record's
// fingerprint acquires it with a higher fence. It reads the item
// (consistent GetItem) and writes it with an UpdateItem on the condition
// that it is still as read (state, fence, last write, expiry); if it
// changed in between, it tries again. The record keeps its fingerprint,
// its retention (expires_at, ttl), its ClaimedAt and its recovery points.
// A record past its retention is gone: ErrNotFound.
func (s *Store) ForceRelease(ctx context.Context, key string) (idemstore.Record, error) {
	s.hint.Drop(key) // the next claim of key is likely a new run
	if err := ctx.Err(); err != nil {
		return idemstore.Record{}, err
	}
	if err := s.checkKey(key); err != nil {
		return idemstore.Record{}, err
	}
	k := s.itemKey(key)
	for round := 1; round <= maxClaimRounds; round++ {
		r, now, err := s.getLive(ctx, "force release", key, k)
		if err != nil {
			return idemstore.Record{}, err
		}
		var noOwner idemstore.Token
		out, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:           s.table,
			Key:                 k,
			UpdateExpression:    aws.String("SET #st = :rel, #ow = :noow, #fe = :newfe, #up = :now REMOVE #res"),
			ConditionExpression: aws.String("#st = :st AND #fe = :fe AND #up = :up AND #ex = :ex"),
			ExpressionAttributeNames: map[string]string{"#st": aState, "#ow": aOwner, "#fe": aFence,
				"#up": aUpdatedAt, "#ex": aExpiresAt, "#res": aResult},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":rel":   avReleased,
				":noow":  &types.AttributeValueMemberB{Value: noOwner[:]},
				":newfe": uintN(r.Fence + 1),
				":now":   nanos(now),
				":st":    stateAV(r.State),
				":fe":    uintN(r.Fence),
				":up":    nanos(r.UpdatedAt),
				":ex":    nanos(r.ExpiresAt),
			},
			ReturnValues: types.ReturnValueAllNew,
		})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			continue // changed since the read
		}
		if err != nil {
			return idemstore.Record{}, s.opError(ctx, "force release", key, err)
		}
		return decode(key, out.Attributes)
	}
	return idemstore.Record{}, fmt.Errorf("%w: dynamostore: force release %q: the item kept changing under %d attempts",
		idem.ErrStoreUnavailable, key, maxClaimRounds)
}

// Cleanup implements idemstore.Admin: it deletes the records past their
// retention (and the entity order records past theirs) that DynamoDB's
// time to live has not removed yet. DynamoDB deletes expired items on its
// own, typically within days and without consuming write capacity;
// Cleanup is for what that leaves: tables without time to live enabled,
// emulators that have none (dynalite, DynamoDB Local), and operators who
// want List to show only live records now. It scans the table for items
// whose expires_at has passed by the store's clock (for an in-progress
// record, expires_at + the skew margin, as a claim judges it), and
// deletes each with a DeleteItem on the condition that it is still past
// its retention, so a record claimed again meanwhile stays. Items that
// are not valid records are left alone. One call deletes at most
// WithCleanupLimit items (default DefaultCleanupLimit) and returns how
// many records it deleted (order records are not counted); call it again
// to carry on.
func (s *Store) Cleanup(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	now := s.now()
	names := map[string]string{"#st": aState, "#ex": aExpiresAt}
	vals := func() map[string]types.AttributeValue {
		return map[string]types.AttributeValue{":inp": avInProgress, ":now": nanos(now), ":tko": nanos(now.Add(-s.skew))}
	}
	n, deleted := 0, 0
	errLimit := errors.New("limit")
	err := s.scan(ctx, "cleanup", "", deadCond, names, vals(), func(key string, item map[string]types.AttributeValue) error {
		order := isOrderItem(item)
		if !order {
			if _, err := decode(key, item); err != nil {
				return nil // not ours to judge: List reports it
			}
		}
		_, err := s.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName:                 s.table,
			Key:                       s.itemKey(key),
			ConditionExpression:       aws.String(deadCond),
			ExpressionAttributeNames:  map[string]string{"#st": aState, "#ex": aExpiresAt},
			ExpressionAttributeValues: vals(),
		})
		var ccf *types.ConditionalCheckFailedException
		switch {
		case errors.As(err, &ccf):
			return nil // claimed again, or deleted, meanwhile
		case err != nil:
			return s.opError(ctx, "cleanup", key, err)
		}
		deleted++
		if !order {
			n++
		}
		if deleted >= s.cleanupLimit {
			return errLimit
		}
		return nil
	})
	if errors.Is(err, errLimit) {
		err = nil
	}
	return n, err
}
