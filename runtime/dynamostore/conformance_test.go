package dynamostore_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemgen/idemgen/runtime/dynamostore"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

func isTTLUnsupported(err error) bool { return errors.Is(err, dynamostore.ErrTTLNotEnabled) }

func newStore(t testing.TB, api dynamostore.API, table string, opts ...dynamostore.Option) *dynamostore.Store {
	t.Helper()
	opts = append([]dynamostore.Option{dynamostore.WithKeyPrefix(uniquePrefix(t)),
		dynamostore.WithPollInterval(5*time.Millisecond, 50*time.Millisecond)}, opts...)
	return openStore(t, api, table, opts...)
}

// openStore is dynamostore.New with opts alone, the store's defaults
// for the rest.
func openStore(t testing.TB, api dynamostore.API, table string, opts ...dynamostore.Option) *dynamostore.Store {
	t.Helper()
	s, err := dynamostore.New(context.Background(), api, table, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The suite on the caller's clock, moved by hand: the store reads no other
// clock, so the suite needs no sleeping. The default skew margin (1s) is
// well inside the suite's lease + lease/2.
func TestConformance(t *testing.T) {
	t.Parallel() // the three runs overlap: the server, not the test, is the bottleneck
	client, table := dynamo(t)
	tx := transactions(t, client, table)
	h := suiteHarness(client, table, tx, nil, pkItem)
	h.Raw = rawItems(client, table)
	idemtest.RunStoreSuite(t, h)
}

// suiteHarness is the suite's Harness on table, on the caller's clock
// moved by hand: each store has a key prefix of its own and the layout
// options; item is a record item's key from the record's prefixed key.
func suiteHarness(client *dynamodb.Client, table string, tx bool, layout []dynamostore.Option,
	item func(key string) map[string]types.AttributeValue) idemtest.Harness {
	var prefixes sync.Map // store -> its key prefix
	itemOf := func(s idemstore.Store, key string) map[string]types.AttributeValue {
		prefix, _ := prefixes.Load(s)
		return item(prefix.(string) + key)
	}
	return idemtest.Harness{
		New: func(t *testing.T, now func() time.Time) idemstore.Store {
			prefix := uniquePrefix(t)
			opts := append(slices.Clone(layout), dynamostore.WithClock(now), dynamostore.WithKeyPrefix(prefix))
			s := maybeOrdering(tx, newStore(t, client, table, opts...))
			prefixes.Store(s, prefix)
			return s
		},
		ManualClock: true,
		// An item written before records carried ClaimedAt has no
		// claimed_at attribute.
		Legacy:  func(t *testing.T, s idemstore.Store, key string) { legacyItem(t, client, table, itemOf(s, key)) },
		Corrupt: func(t *testing.T, s idemstore.Store, key string) { corruptItem(t, client, table, itemOf(s, key)) },
	}
}

// pkItem is the default layout's item key.
func pkItem(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: key}}
}

// legacyItem rewrites the record item at key as the store wrote it before
// records carried ClaimedAt: without claimed_at.
func legacyItem(t *testing.T, client *dynamodb.Client, table string, key map[string]types.AttributeValue) {
	t.Helper()
	updateItem(t, client, table, key, &dynamodb.UpdateItemInput{UpdateExpression: aws.String("REMOVE claimed_at")})
}

// updateItem applies in to the item at key of table.
func updateItem(t *testing.T, client *dynamodb.Client, table string, key map[string]types.AttributeValue, in *dynamodb.UpdateItemInput) {
	t.Helper()
	in.TableName, in.Key = aws.String(table), key
	if _, err := client.UpdateItem(context.Background(), in); err != nil {
		t.Fatalf("updating %v: %v", key, err)
	}
}

// corruptItem damages the record item at key the way a foreign writer
// would: its owner token becomes 3 bytes (the store writes 16) and its
// fence a string. The item keeps its state and retention, so a claim's
// condition fails on it and the store has to decode it.
func corruptItem(t *testing.T, client *dynamodb.Client, table string, key map[string]types.AttributeValue) {
	t.Helper()
	updateItem(t, client, table, key, &dynamodb.UpdateItemInput{
		UpdateExpression:         aws.String("SET #ow = :ow, #fe = :fe"),
		ConditionExpression:      aws.String("attribute_exists(#ow)"),
		ExpressionAttributeNames: map[string]string{"#ow": "owner", "#fe": "fence"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":ow": &types.AttributeValueMemberB{Value: []byte{1, 2, 3}},
			":fe": &types.AttributeValueMemberS{Value: "seven"},
		},
	})
}

// A single-table layout: custom partition key, static sort key, key
// prefix and TTL attribute names.
func TestConformanceSingleTable(t *testing.T) {
	t.Parallel() // the three runs overlap: the server, not the test, is the bottleneck
	client, _ := dynamo(t)
	layout := []dynamostore.Option{dynamostore.WithPartitionKey("PK"), dynamostore.WithSortKey("SK", "IDEM"),
		dynamostore.WithTTLAttribute("expires")}
	table := "idemgen_single_" + time.Now().Format("150405.000000")
	makeTable(t, client, table, layout...)
	tx := transactions(t, client, shared.table)
	idemtest.RunStoreSuite(t, suiteHarness(client, table, tx, layout, func(key string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: key}, "SK": &types.AttributeValueMemberS{Value: "IDEM"}}
	}))
}

// The suite through the fallback read: the server answers failed
// conditions without the item.
func TestConformanceWithoutReturnOnFailure(t *testing.T) {
	t.Parallel() // the three runs overlap: the server, not the test, is the bottleneck
	_, table := dynamo(t)
	client := newClient(endpoint(), withoutReturnOnFailure)
	tx := transactions(t, client, table)
	idemtest.RunStoreSuite(t, suiteHarness(client, table, tx, nil, pkItem))
}

// maybeOrdering is s, without ordering when the server has no
// TransactWriteItems (see transactions).
func maybeOrdering(tx bool, s *dynamostore.Store) idemstore.Store {
	if tx {
		return s
	}
	return noOrdering{s}
}
