package dynamostore_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemgen/idemgen/runtime/dynamostore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

// BenchmarkDynamoStore measures a replay (one conditional UpdateItem) and a
// first execution (claim and complete: two UpdateItems) through idem.Guard
// and idem.Do, at 1 and 16 concurrent callers, against dynalite. Each call
// is paired with a raw consistent GetItem of a record item by the same
// caller; call_ns/op and GetItem_ns/op are their mean latencies and
// x_GetItem the ratio. (The ns/op column times a pair.)
func BenchmarkDynamoStore(b *testing.B) {
	client, table := dynamo(b)
	prefix := uniquePrefix(b)
	s := openStore(b, client, table, dynamostore.WithKeyPrefix(prefix))
	spec := &idem.Spec{Name: "dynamostore_bench.CreateInvoice", Lease: 30 * time.Second, TTL: time.Hour}
	do := idemtest.InvoiceCall(b, idem.NewGuard(s), spec)
	// Records to replay, and the raw items behind them for the baseline.
	const stored = 64
	for i := 0; i < stored; i++ {
		do("replay-" + strconv.Itoa(i))
	}
	rawKeys := rawRecordKeys(b, client, table, prefix)
	rawGet := func(i int) {
		_, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table),
			Key: rawKeys[i%len(rawKeys)], ConsistentRead: aws.Bool(true)})
		if err != nil {
			b.Error(err)
		}
	}
	var fresh atomic.Int64
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, callers := range []int{1, 16} {
		for _, bc := range []struct {
			name string
			op   func(i int)
		}{
			{"replay", func(i int) { do("replay-" + strconv.Itoa(i%stored)) }},
			{"first_execution", func(int) { do("first-" + runID + "-" + strconv.FormatInt(fresh.Add(1), 10)) }},
		} {
			b.Run(fmt.Sprintf("%s/callers=%d", bc.name, callers), func(b *testing.B) {
				idemtest.RunVersus(b, callers, "GetItem", rawGet, bc.op)
			})
		}
	}
}

// rawRecordKeys finds the primary keys of the record items under prefix
// by scanning the table (setup only).
func rawRecordKeys(b *testing.B, client *dynamodb.Client, table, prefix string) []map[string]types.AttributeValue {
	var keys []map[string]types.AttributeValue
	p := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{
		TableName:                 aws.String(table),
		FilterExpression:          aws.String("begins_with(pk, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: prefix}},
	})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		for _, it := range out.Items {
			keys = append(keys, map[string]types.AttributeValue{"pk": it["pk"]})
		}
	}
	if len(keys) == 0 {
		b.Fatal("no record items to read")
	}
	return keys
}
