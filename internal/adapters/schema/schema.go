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

	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"

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

// Attribute names of the Deadlines table, the to-do list (the deadlines module's
// table, deadlines/dynamo, whose definition it is), for the service's tools that
// read its items themselves: one item per outstanding row of every kind, a settled
// marker once it has settled.
const (
	DeadlineKey       = "key"       // partition key (S): the row's key (its kind's prefix and subject)
	DeadlineSubject   = "subject"   // S: what the row is about: a rental id, a payment reference
	DeadlineKindShard = "kindShard" // S: the row's kind and write shard, "payment#2"; removed on settlement
	DeadlineDueAt     = "dueAtMs"   // N: when the row falls due, Unix milliseconds
	DeadlineVersion   = "version"   // N: stream version of the last event applied, for the ordered kinds
	DeadlineSettled   = "settled"   // S: how the row settled, on markers only
	DeadlineExpiresAt = "expiresAt" // N: Unix seconds when DynamoDB TTL deletes a marker
	DeadlinesByDue    = "DueByKind" // the index: outstanding rows by kind and shard, soonest due first
)

// Deadlines returns the definition of the Deadlines table named name: the
// deadlines module's (deadlinetable.Definition).
func Deadlines(name string) *dynamodb.CreateTableInput { return deadlinetable.Definition(name) }

// DeadlinesTTL is the TTL setting of the Deadlines table (deadlinetable.TTL).
func DeadlinesTTL(name string) *dynamodb.UpdateTimeToLiveInput { return deadlinetable.TTL(name) }

// CreateDeadlines creates the Deadlines table, waits for it and turns on TTL for
// its settled markers. Safe to call on every start.
func CreateDeadlines(ctx context.Context, client *dynamodb.Client, name string) error {
	if err := Create(ctx, client, Deadlines(name)); err != nil {
		return err
	}
	out, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err == nil && out.TimeToLiveDescription != nil && out.TimeToLiveDescription.TimeToLiveStatus == types.TimeToLiveStatusEnabled {
		return nil
	}
	if _, err := client.UpdateTimeToLive(ctx, DeadlinesTTL(name)); err != nil {
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
