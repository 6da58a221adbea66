package dynamo

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Definition returns the definition of a Deadlines table named name: keyed by the
// row's key alone, with one global secondary index, DueByKind, keyed by the
// outstanding rows' kind and shard and their due time. The index is sparse (a
// settled row leaves it) and projects keys only: a reader needs the key and the
// due time, nothing else. Billed per request. CloudFormation is the same table
// for a deployment.
func Definition(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrKey), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrKindShard), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrDueAt), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String(attrKey), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(indexName),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(attrKindShard), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(attrDueAt), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
	}
}

// TTL returns the time-to-live setting of the Deadlines table named name: on, by
// the markers' expiry.
func TTL(name string) *dynamodb.UpdateTimeToLiveInput {
	return &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attrExpiresAt),
			Enabled:       aws.Bool(true),
		},
	}
}

// Create creates the Deadlines table named name (Definition), waits until it is
// active, at most until ctx is done or five minutes, and turns its TTL on. A
// table of that name that exists already is left as it is: Create is safe to call
// on every start. For tests and local runs; a deployment declares the table
// (CloudFormation).
func Create(ctx context.Context, client *dynamodb.Client, name string) error {
	_, err := client.CreateTable(ctx, Definition(name))
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamo: create table %s: %w", name, err)
	}
	waiter := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, 2*time.Second
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 5*time.Minute); err != nil {
		return fmt.Errorf("dynamo: wait for table %s: %w", name, err)
	}
	out, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err == nil && out.TimeToLiveDescription != nil && out.TimeToLiveDescription.TimeToLiveStatus == types.TimeToLiveStatusEnabled {
		return nil
	}
	if _, err := client.UpdateTimeToLive(ctx, TTL(name)); err != nil {
		return fmt.Errorf("dynamo: turn on the TTL of %s: %w", name, err)
	}
	return nil
}

//go:embed table.yaml
var cloudFormation string

// CloudFormation returns the Deadlines table as a resource of a CloudFormation
// template, DeadlinesTable, to put under a template's Resources: Definition's
// table, named after the stack, with its TTL on, point-in-time recovery and
// encryption at rest.
func CloudFormation() string { return cloudFormation }
