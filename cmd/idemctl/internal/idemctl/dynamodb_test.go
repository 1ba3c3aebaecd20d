package idemctl

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/dynamostore"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// dynamoEndpoint is the DynamoDB-compatible server the tests use: dynalite,
// started by scripts/dynalite.sh (or make services).
func dynamoEndpoint() string { return testenv.Env("IDEM_DYNAMO_ENDPOINT", "http://127.0.0.1:4567") }

// openDynamoBackend is the dynalite backend: the application's store on a
// fresh table (default layout), and the dynamodb:// URL idemctl gets for it.
func openDynamoBackend(t *testing.T) (string, idemstore.Store) {
	table, st := dynamoTable(t)
	return "dynamodb://" + table + "?endpoint=" + url.QueryEscape(dynamoEndpoint()), st
}

// openDynamoSingleTable is a single-table layout: the URL names the
// partition key, the sort key and its value, the key prefix and the TTL
// attribute the application's store uses.
func openDynamoSingleTable(t *testing.T) (string, idemstore.Store) {
	layout := []dynamostore.Option{dynamostore.WithPartitionKey("PK"), dynamostore.WithSortKey("SK", "IDEM"),
		dynamostore.WithKeyPrefix("IDEM#"), dynamostore.WithTTLAttribute("expires")}
	table, st := dynamoTable(t, layout...)
	q := url.Values{"endpoint": {dynamoEndpoint()}, "partition_key": {"PK"}, "sort_key": {"SK"}, "sort_value": {"IDEM"},
		"key_prefix": {"IDEM#"}, "ttl_attribute": {"expires"}, "region": {"eu-west-1"}}
	return "dynamodb://" + table + "?" + q.Encode(), st
}

func dynamoTable(t *testing.T, opts ...dynamostore.Option) (string, idemstore.Store) {
	ctx := context.Background()
	client := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(dynamoEndpoint()),
		Credentials:  credentials.NewStaticCredentialsProvider("idemgen", "idemgen", ""),
		HTTPClient:   &http.Client{Timeout: 10 * time.Second},
	})
	probe, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := client.ListTables(probe, &dynamodb.ListTablesInput{}, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	testenv.Need(t, "a DynamoDB-compatible server at "+dynamoEndpoint(), "Start dynalite: bash scripts/dynalite.sh (or make services), or set IDEM_DYNAMO_ENDPOINT.", err)
	table := "idemctl_" + testenv.RandName()
	if err := dynamostore.CreateTable(ctx, client, table, opts...); err != nil && !isTTLNotEnabled(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)}) //nolint:errcheck
	})
	st, err := dynamostore.New(ctx, client, table, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return table, st
}

// dynalite has no UpdateTimeToLive: CreateTable says so, and the table
// is ready.
func isTTLNotEnabled(err error) bool { return errors.Is(err, dynamostore.ErrTTLNotEnabled) }

// Bad DynamoDB store URLs are usage errors, before any request.
func TestOpenDynamoRejects(t *testing.T) {
	for _, raw := range []string{
		"dynamodb://",
		"dynamodb://table/extra",
		"dynamodb://table?sort_value=IDEM",
		"dynamodb://table?endpoint=http://127.0.0.1:1&colour=red",
	} {
		if _, err := open(context.Background(), raw); !errors.Is(err, errUsage) {
			t.Errorf("open(%q) = %v, want a usage error", raw, err)
		}
	}
}
