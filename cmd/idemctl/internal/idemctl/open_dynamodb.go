package idemctl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemgen/idemgen/runtime/dynamostore"
	"github.com/idemgen/idemgen/runtime/idem"
)

// openDynamo opens
//
//	dynamodb://TABLE[?region=R&endpoint=URL&partition_key=PK&sort_key=SK&sort_value=V&key_prefix=P&ttl_attribute=T]
//
// The options name the application's table layout (dynamostore's
// WithPartitionKey, WithSortKey, WithKeyPrefix and WithTTLAttribute; the
// defaults are the store's). Region and credentials come from the usual
// AWS configuration (environment, shared config and credentials files,
// instance or task roles); region= overrides the region. endpoint= talks
// to another DynamoDB-compatible endpoint (DynamoDB Local, dynalite, a VPC
// endpoint); an http:// endpoint with no AWS credentials configured
// (environment or files) uses dummy ones, as local servers accept
// anything (DynamoDB Local without -sharedDb keeps one database per access
// key and region: give idemctl the application's).
func openDynamo(ctx context.Context, raw string) (*backend, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: store URL: %v", errUsage, err)
	}
	table := u.Host
	if table == "" || strings.Trim(u.Path, "/") != "" {
		return nil, fmt.Errorf("%w: DynamoDB store URL %q: write dynamodb://TABLE[?endpoint=URL&region=R]", errUsage, raw)
	}
	q := u.Query()
	var opts []dynamostore.Option
	for param, set := range map[string]func(string) dynamostore.Option{
		"partition_key": dynamostore.WithPartitionKey,
		"key_prefix":    dynamostore.WithKeyPrefix,
		"ttl_attribute": dynamostore.WithTTLAttribute,
	} {
		if v := q.Get(param); v != "" {
			opts = append(opts, set(v))
		}
		q.Del(param)
	}
	if sk := q.Get("sort_key"); sk != "" {
		opts = append(opts, dynamostore.WithSortKey(sk, q.Get("sort_value")))
	} else if q.Get("sort_value") != "" {
		return nil, fmt.Errorf("%w: DynamoDB store URL %q: sort_value without sort_key", errUsage, raw)
	}
	endpoint, region := q.Get("endpoint"), q.Get("region")
	for _, p := range []string{"sort_key", "sort_value", "endpoint", "region"} {
		q.Del(p)
	}
	for p := range q {
		return nil, fmt.Errorf("%w: DynamoDB store URL %q: unknown parameter %q (want region, endpoint, partition_key, sort_key, sort_value, key_prefix, ttl_attribute)", errUsage, raw, p)
	}
	var loadOpts []func(*config.LoadOptions) error
	if region != "" {
		loadOpts = append(loadOpts, config.WithRegion(region))
	}
	local := strings.HasPrefix(endpoint, "http://") // DynamoDB itself is HTTPS only
	if local {
		// No instance role to ask (and no seconds lost asking for one).
		loadOpts = append(loadOpts, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		if endpoint == "" {
			return nil, fmt.Errorf("%w: no AWS region: set AWS_REGION or add region= to the store URL", errUsage)
		}
		cfg.Region = "us-east-1" // a local endpoint ignores it
	}
	if local {
		if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
			cfg.Credentials = credentials.NewStaticCredentialsProvider("idemctl", "idemctl", "")
		}
	}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
	st, err := dynamostore.New(ctx, client, table, opts...) // one GetItem
	if err != nil {
		if errors.Is(err, idem.ErrStoreUnavailable) {
			return nil, fmt.Errorf("connecting to DynamoDB table %s: %w", table, err)
		}
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	// DynamoDB has no clock a request can read: the store judges leases by
	// the callers' clocks (with a skew margin), so idemctl uses its own.
	now := func(context.Context) (time.Time, error) { return time.Now(), nil }
	return &backend{kind: "dynamodb", store: st, admin: st, now: now, close: func() {}}, nil
}
