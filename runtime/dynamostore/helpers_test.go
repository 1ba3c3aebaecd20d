package dynamostore_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/idemgen/idemgen/runtime/dynamostore"
	"github.com/idemgen/idemgen/runtime/idemstore"

	"github.com/idemgen/idemgen/internal/testenv"
)

// endpoint is the DynamoDB-compatible server the tests use: dynalite,
// started by `make services` (scripts/dynalite.sh).
func endpoint() string {
	if e := os.Getenv("IDEM_DYNAMO_ENDPOINT"); e != "" {
		return e
	}
	return "http://127.0.0.1:4567"
}

// newClient is a client as a user would configure one for a local server:
// static dummy credentials, us-east-1, the endpoint. optFns add test
// middleware.
func newClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	hc := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConnsPerHost = 256
	})
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("idemgen", "idemgen", ""),
		HTTPClient:   hc,
	}, optFns...)
}

var shared struct {
	once   sync.Once
	client *dynamodb.Client
	table  string
	err    error
}

// needServer skips the test (or fails it under CI=true) when the server is
// not running.
func needServer(t testing.TB, client *dynamodb.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := client.ListTables(ctx, &dynamodb.ListTablesInput{}, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	if err == nil {
		return
	}
	testenv.Need(t, "a DynamoDB-compatible server at "+endpoint(), "start dynalite with `make services` or `scripts/dynalite.sh`, or set IDEM_DYNAMO_ENDPOINT", err)
}

// dynamo returns the shared client and a table made for this test process
// (dropped by TestMain).
func dynamo(t testing.TB) (*dynamodb.Client, string) {
	t.Helper()
	shared.once.Do(func() {
		shared.client = newClient(endpoint())
		shared.table = "idemgen_test_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	})
	needServer(t, shared.client)
	makeTable(t, shared.client, shared.table)
	return shared.client, shared.table
}

var made sync.Map // table name -> struct{}

// makeTable creates table once per process with CreateTable (dynalite has
// no UpdateTimeToLive: that part of CreateTable's answer is expected).
func makeTable(t testing.TB, client *dynamodb.Client, table string, opts ...dynamostore.Option) {
	t.Helper()
	if _, ok := made.Load(table); ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := dynamostore.CreateTable(ctx, client, table, opts...); err != nil && !isTTLUnsupported(err) {
		t.Fatalf("CreateTable(%s): %v", table, err)
	}
	made.Store(table, struct{}{})
}

var prefixes atomic.Int64

// uniquePrefix isolates one store from every other in the shared table.
func uniquePrefix(t testing.TB) string {
	return fmt.Sprintf("%s#%d#", t.Name(), prefixes.Add(1))
}

func TestMain(m *testing.M) {
	code := m.Run()
	made.Range(func(k, _ any) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = shared.client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(k.(string))})
		cancel()
		return true
	})
	os.Exit(code)
}

// counter counts the HTTP requests a client sends, by operation: it sits
// after the SDK's retry middleware, so every attempt counts.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Finalize.Insert(middleware.FinalizeMiddlewareFunc("countRequests",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				c.mu.Lock()
				if c.n == nil {
					c.n = map[string]int{}
				}
				c.n[middleware.GetOperationName(ctx)]++
				c.mu.Unlock()
				return next.HandleFinalize(ctx, in)
			}), "Retry", middleware.After)
	})
}

// take returns the counts so far and resets them.
func (c *counter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = nil
	if n == nil {
		n = map[string]int{}
	}
	return n
}

// withoutReturnOnFailure strips ReturnValuesOnConditionCheckFailure from
// every request, so the server answers a failed condition without the
// item, as servers without the feature do: the store's fallback read runs.
func withoutReturnOnFailure(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("stripReturnOnFailure",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				switch p := in.Parameters.(type) {
				case *dynamodb.UpdateItemInput:
					p.ReturnValuesOnConditionCheckFailure = ""
				case *dynamodb.PutItemInput:
					p.ReturnValuesOnConditionCheckFailure = ""
				case *dynamodb.DeleteItemInput:
					p.ReturnValuesOnConditionCheckFailure = ""
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	})
}

// transactions reports whether the server at client has
// TransactWriteItems, which ordered claims need (dynalite 4.0.0 has not:
// tools/dynalite-server.js adds it, so a server started from an older
// checkout lacks it). Without it, the test says so (and fails under
// CI=true), and the conformance runs check the store without ordering.
func transactions(t testing.TB, client *dynamodb.Client, table string) bool {
	t.Helper()
	_, err := client.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{
		ConditionCheck: &types.ConditionCheck{
			TableName:                aws.String(table),
			Key:                      map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "\x00idemgen-transactions-probe"}},
			ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": "pk"},
		},
	}}}, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	if err == nil {
		return true
	}
	msg := fmt.Sprintf("the server at %s has no TransactWriteItems (%v): ordering cases not run; restart dynalite from this checkout (scripts/dynalite.sh stop; scripts/dynalite.sh), or set IDEM_DYNAMO_ENDPOINT", endpoint(), err)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Log(msg)
	return false
}

// noOrdering hides the store's ordering from the conformance suite (a
// server without TransactWriteItems).
type noOrdering struct{ *dynamostore.Store }

func (noOrdering) SupportsOrdering() bool { return false }

// rawItems reads every item of table, every attribute's bytes or text, as
// a reader of the table (or its exports) would.
func rawItems(client *dynamodb.Client, table string) func(t *testing.T, s idemstore.Store) [][]byte {
	return func(t *testing.T, _ idemstore.Store) [][]byte {
		var out [][]byte
		var walk func(v types.AttributeValue)
		walk = func(v types.AttributeValue) {
			switch v := v.(type) {
			case *types.AttributeValueMemberB:
				out = append(out, v.Value)
			case *types.AttributeValueMemberS:
				out = append(out, []byte(v.Value))
			case *types.AttributeValueMemberN:
				out = append(out, []byte(v.Value))
			case *types.AttributeValueMemberBS:
				out = append(out, v.Value...)
			case *types.AttributeValueMemberSS:
				for _, s := range v.Value {
					out = append(out, []byte(s))
				}
			case *types.AttributeValueMemberM:
				for k, e := range v.Value {
					out = append(out, []byte(k))
					walk(e)
				}
			case *types.AttributeValueMemberL:
				for _, e := range v.Value {
					walk(e)
				}
			}
		}
		p := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
		for p.HasMorePages() {
			page, err := p.NextPage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, item := range page.Items {
				walk(&types.AttributeValueMemberM{Value: item})
			}
		}
		return out
	}
}
