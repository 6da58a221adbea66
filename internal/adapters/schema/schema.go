// Package schema defines the DynamoDB tables of the service in one place: their keys,
// indexes and streams. Local tests and the local runner create tables from these
// definitions, and template.yaml must agree with them.
package schema

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute names of the Events table. Each item is one event record.
const (
	EventsStreamID      = "streamId"      // partition key (S)
	EventsVersion       = "version"       // sort key (N), 1, 2, 3, ... within a stream
	EventsEventID       = "eventId"       // S
	EventsType          = "type"          // S
	EventsData          = "data"          // S, the JSON payload
	EventsTags          = "tags"          // L of S, absent when there are none
	EventsRecordedAt    = "recordedAt"    // S, RFC 3339 with nanoseconds, UTC
	EventsCorrelationID = "correlationId" // S, absent when empty
	EventsCausationID   = "causationId"   // S, absent when empty
)

// Events returns the definition of the Events table named name: stream id and version
// as keys, on-demand billing, and a stream of new images for the process and the
// projector.
func Events(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(EventsStreamID), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(EventsVersion), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(EventsStreamID), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(EventsVersion), KeyType: types.KeyTypeRange},
		},
		StreamSpecification: &types.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: types.StreamViewTypeNewImage,
		},
	}
}

// Attribute names of the PendingPayments table: one item per payment reference, an
// outstanding payment while it has a due shard, a settled marker once it has not.
const (
	PendingReference    = "reference"    // partition key (S): the payment reference
	PendingRentalID     = "rentalId"     // S
	PendingPreparedAt   = "preparedAtMs" // N: when PaymentPrepared was recorded, Unix milliseconds
	PendingDueShard     = "dueShard"     // S: the index's write shard; removed on settlement
	PendingVersion      = "version"      // N: payment stream version of the last event applied
	PendingSettled      = "settled"      // S: how the payment settled, on markers only
	PendingExpiresAt    = "expiresAt"    // N: Unix seconds when DynamoDB TTL deletes a marker
	PendingAttempts     = "attempts"     // N: failed redeliveries of a parked stream record
	PendingByPreparedAt = "ByPreparedAt" // the index: outstanding rows by shard, oldest first
)

// PendingPayments returns the definition of the PendingPayments table named name: the
// projection of outstanding payments the sweep reads. Its global secondary index holds
// only outstanding rows (the due shard is removed on settlement, so the index is
// sparse), ordered by preparedAt within each write shard, and projects only keys: the
// sweep needs the reference and the time, nothing else.
func PendingPayments(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(PendingReference), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(PendingDueShard), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(PendingPreparedAt), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(PendingReference), KeyType: types.KeyTypeHash},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(PendingByPreparedAt),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(PendingDueShard), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(PendingPreparedAt), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
	}
}

// PendingPaymentsTTL is the TTL setting of the PendingPayments table.
func PendingPaymentsTTL(name string) *dynamodb.UpdateTimeToLiveInput {
	return &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(PendingExpiresAt),
			Enabled:       aws.Bool(true),
		},
	}
}

// CreatePendingPayments creates the PendingPayments table, waits for it and turns on
// TTL for its settled markers. Safe to call on every start.
func CreatePendingPayments(ctx context.Context, client *dynamodb.Client, name string) error {
	if err := Create(ctx, client, PendingPayments(name)); err != nil {
		return err
	}
	out, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err == nil && out.TimeToLiveDescription != nil && out.TimeToLiveDescription.TimeToLiveStatus == types.TimeToLiveStatusEnabled {
		return nil
	}
	if _, err := client.UpdateTimeToLive(ctx, PendingPaymentsTTL(name)); err != nil {
		return fmt.Errorf("enable TTL on %s: %w", name, err)
	}
	return nil
}

// Create creates the table that def describes and waits until it is active. A table
// of that name that already exists is left as it is and is not an error, so Create
// is safe to call on every start.
func Create(ctx context.Context, client *dynamodb.Client, def *dynamodb.CreateTableInput) error {
	_, err := client.CreateTable(ctx, def)
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", aws.ToString(def.TableName), err)
	}
	waiter := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 100 * time.Millisecond
		o.MaxDelay = 2 * time.Second
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: def.TableName}, 5*time.Minute); err != nil {
		return fmt.Errorf("wait for table %s: %w", aws.ToString(def.TableName), err)
	}
	return nil
}

// StreamFilter returns the Lambda event filtering pattern of an event source mapping
// on the Events table's stream that delivers only records whose new image's type is
// one of types.
func StreamFilter(types []string) string {
	p := map[string]any{"dynamodb": map[string]any{"NewImage": map[string]any{EventsType: map[string]any{"S": types}}}}
	b, _ := json.Marshal(p) // maps of strings always marshal
	return string(b)
}
