package orders

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The Orders table's attributes: its key (id, seq) and each event's type, time
// (RFC 3339 in UTC, to the millisecond) and payload.
const (
	AttrID   = "id"   // partition key (S): the order's or invoice's id
	AttrSeq  = "seq"  // sort key (N): the event's place in its stream, from 1
	AttrType = "type" // S: the event type
	AttrAt   = "at"   // S: when the event was recorded
	AttrData = "data" // S: the payload, a JSON object; absent when empty
)

// API is the part of the DynamoDB client a Store uses. *dynamodb.Client is one.
type API interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Store is the Orders table and the commands that append to it. It is safe for
// concurrent use: appends are conditional, so two writers of a stream never
// both take one place.
type Store struct {
	DB    API
	Table string
	// Now is the clock events are recorded by; nil: time.Now.
	Now func() time.Time
}

// NewStore returns the store of the Orders table named table, reached through db.
func NewStore(db API, table string) (*Store, error) {
	if db == nil || table == "" {
		return nil, errors.New("orders: a store needs a client and a table name")
	}
	return &Store{DB: db, Table: table}, nil
}

// Definition returns the definition of an Orders table named name: keyed by id
// and seq, billed per request, its stream on with new images (template.yaml's
// OrdersTable is the same table for a deployment).
func Definition(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(AttrID), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(AttrSeq), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(AttrID), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(AttrSeq), KeyType: types.KeyTypeRange},
		},
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage},
	}
}

func (s *Store) now() time.Time {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	return now().UTC().Truncate(time.Millisecond)
}

// Read returns the events of the stream id in order, read strongly consistently;
// none for a stream that does not exist.
func (s *Store) Read(ctx context.Context, id string) ([]Event, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.Table),
		KeyConditionExpression:    aws.String("#id = :id"),
		ExpressionAttributeNames:  map[string]string{"#id": AttrID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":id": &types.AttributeValueMemberS{Value: id}},
		ConsistentRead:            aws.Bool(true),
	}
	var events []Event
	for {
		out, err := s.DB.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("orders: read %s: %w", id, err)
		}
		for _, item := range out.Items {
			e, err := EventOf(item)
			if err != nil {
				return nil, err
			}
			events = append(events, e)
		}
		if len(out.LastEvaluatedKey) == 0 {
			return events, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// append writes e at its place, on the condition that the place is free:
// ErrConflict if another writer took it.
func (s *Store) append(ctx context.Context, e Event) error {
	item := map[string]types.AttributeValue{
		AttrID:   &types.AttributeValueMemberS{Value: e.ID},
		AttrSeq:  &types.AttributeValueMemberN{Value: strconv.FormatInt(e.Seq, 10)},
		AttrType: &types.AttributeValueMemberS{Value: e.Type},
		AttrAt:   &types.AttributeValueMemberS{Value: e.At.UTC().Format(time.RFC3339Nano)},
	}
	if len(e.Data) > 0 {
		item[AttrData] = &types.AttributeValueMemberS{Value: string(e.Data)}
	}
	_, err := s.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.Table),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": AttrID},
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return fmt.Errorf("%w: %s at %d", ErrConflict, e.ID, e.Seq)
	}
	if err != nil {
		return fmt.Errorf("orders: append %s to %s: %w", e.Type, e.ID, err)
	}
	return nil
}

// EventOf decodes an item of the Orders table; an item that is not an event is
// ErrCorrupt.
func EventOf(item map[string]types.AttributeValue) (Event, error) {
	id, okID := item[AttrID].(*types.AttributeValueMemberS)
	seq, okSeq := item[AttrSeq].(*types.AttributeValueMemberN)
	typ, okType := item[AttrType].(*types.AttributeValueMemberS)
	at, okAt := item[AttrAt].(*types.AttributeValueMemberS)
	if !okID || !okSeq || !okType || !okAt {
		return Event{}, fmt.Errorf("%w: an item without id, seq, type or at", ErrCorrupt)
	}
	e := Event{ID: id.Value, Type: typ.Value}
	var errSeq, errAt error
	e.Seq, errSeq = strconv.ParseInt(seq.Value, 10, 64)
	e.At, errAt = time.Parse(time.RFC3339Nano, at.Value)
	if err := errors.Join(errSeq, errAt); err != nil {
		return Event{}, fmt.Errorf("%w: %s at %s: %w", ErrCorrupt, id.Value, seq.Value, err)
	}
	if data, ok := item[AttrData].(*types.AttributeValueMemberS); ok {
		e.Data = []byte(data.Value)
	}
	return e, nil
}
