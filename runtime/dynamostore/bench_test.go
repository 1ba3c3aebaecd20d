package dynamostore_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemgen/idemgen/runtime/dynamostore"
	"github.com/idemgen/idemgen/runtime/idem"
)

type benchInvoice struct {
	ID       string   `json:"id"`
	Customer string   `json:"customer"`
	Amount   int64    `json:"amount"`
	Currency string   `json:"currency"`
	Lines    []string `json:"lines"`
}

// interleave calls base(i) then op(i) for i < n, spread over callers
// goroutines, and returns the mean latency of each. Alternating the two
// exposes both to the same server and machine load, which on a shared
// machine moves far more than the difference being measured.
func interleave(callers, n int, base, op func(i int)) (baseMean, opMean time.Duration) {
	var next, baseSum, opSum atomic.Int64
	var wg sync.WaitGroup
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				base(i)
				t1 := time.Now()
				op(i)
				baseSum.Add(int64(t1.Sub(t0)))
				opSum.Add(int64(time.Since(t1)))
			}
		}()
	}
	wg.Wait()
	return time.Duration(baseSum.Load() / int64(n)), time.Duration(opSum.Load() / int64(n))
}

// BenchmarkDynamoStore measures a replay (one conditional UpdateItem) and a
// first execution (claim and complete: two UpdateItems) through idem.Guard
// and idem.Do, at 1 and 16 concurrent callers, against dynalite. Each call
// is paired with a raw consistent GetItem of a record item by the same
// caller; call_ns/op and GetItem_ns/op are their mean latencies and
// x_GetItem the ratio. (The ns/op column times a pair.)
func BenchmarkDynamoStore(b *testing.B) {
	client, table := dynamo(b)
	prefix := uniquePrefix(b)
	s, err := dynamostore.New(context.Background(), client, table, dynamostore.WithKeyPrefix(prefix))
	if err != nil {
		b.Fatal(err)
	}
	g := idem.NewGuard(s)
	spec := &idem.Spec{Name: "dynamostore_bench.CreateInvoice", Lease: 30 * time.Second, TTL: time.Hour}
	inv := benchInvoice{ID: "inv_1", Customer: "cus_42", Amount: 1250, Currency: "EUR", Lines: []string{"seat", "support"}}
	do := func(key string) {
		c := g.Begin(spec, key)
		if _, err := idem.Do(context.Background(), c, func(ctx context.Context) (benchInvoice, error) { return inv, nil }); err != nil {
			b.Error(err)
		}
	}
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
				b.ResetTimer()
				base, took := interleave(callers, b.N, rawGet, bc.op)
				b.StopTimer()
				b.ReportMetric(float64(took.Nanoseconds()), "call_ns/op")
				b.ReportMetric(float64(base.Nanoseconds()), "GetItem_ns/op")
				b.ReportMetric(float64(took)/float64(base), "x_GetItem")
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
