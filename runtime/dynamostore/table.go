package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ErrTTLNotEnabled: CreateTable made the table (it is ready to use) but
// could not enable DynamoDB's time to live on it, so dead items are never
// deleted by DynamoDB (the store still ignores them). Emulators without
// UpdateTimeToLive (dynalite) give this; errors.Is it away in development.
var ErrTTLNotEnabled = errors.New("dynamostore: time to live not enabled on the table")

// CreateTable creates table for the layout the options describe (on-demand
// billing), waits until it is active and enables time to live on the TTL
// attribute. An existing table is left as it is (its time to live is
// still enabled if it is off). Meant for development and tests: in
// production declare the table with your infrastructure as code (see the
// package documentation for the schema).
func CreateTable(ctx context.Context, client *dynamodb.Client, table string, opts ...Option) error {
	c, err := newConfig(opts)
	if err != nil {
		return err
	}
	l := c.layout
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(l.pk), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String(l.pk), KeyType: types.KeyTypeHash}},
	}
	if l.sk != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions,
			types.AttributeDefinition{AttributeName: aws.String(l.sk), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(l.sk), KeyType: types.KeyTypeRange})
	}
	if _, err := client.CreateTable(ctx, in); err != nil {
		var inUse *types.ResourceInUseException
		if !errors.As(err, &inUse) {
			return fmt.Errorf("dynamostore: creating table %s: %w", table, err)
		}
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 500*time.Millisecond, 5*time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 5*time.Minute); err != nil {
		return fmt.Errorf("dynamostore: waiting for table %s: %w", table, err)
	}
	return enableTTL(ctx, client, table, l.ttl)
}

func enableTTL(ctx context.Context, client *dynamodb.Client, table, attr string) error {
	d, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err == nil && d.TimeToLiveDescription != nil {
		td := d.TimeToLiveDescription
		switch td.TimeToLiveStatus {
		case types.TimeToLiveStatusEnabled, types.TimeToLiveStatusEnabling:
			if aws.ToString(td.AttributeName) == attr {
				return nil
			}
			return fmt.Errorf("%w: %s has time to live on attribute %q, not %q", ErrTTLNotEnabled, table, aws.ToString(td.AttributeName), attr)
		}
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attr), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("%w: %s on attribute %q: %w", ErrTTLNotEnabled, table, attr, err)
	}
	return nil
}
