// Package dynamo is the DynamoDB implementation of eventstore.Store, on the Events
// table of package schema: one item per event, keyed by stream id and version, written
// with conditional puts so that no version is ever written twice.
package dynamo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// API is the part of the DynamoDB client the store uses. *dynamodb.Client has it.
type API interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Store is an eventstore.Store on one DynamoDB table. It is safe for concurrent use.
type Store struct {
	client API
	table  string
	now    func() time.Time
}

var (
	_ eventstore.MultiStreamStore = (*Store)(nil)
	_ eventstore.BackwardReader   = (*Store)(nil)
)

// New returns a store on the Events table named table (see schema.Events).
func New(client API, table string) *Store {
	return &Store{client: client, table: table, now: time.Now}
}

var condition = aws.String("attribute_not_exists(#v)")
var conditionNames = map[string]string{"#v": schema.EventsVersion}

// Append implements eventstore.Store. One event is one conditional PutItem; several
// are one TransactWriteItems with a condition on every item and a ClientRequestToken,
// so that the SDK's retries of the same request are idempotent. A failed condition
// becomes an *eventstore.ConflictError; throttling and server errors are retried by
// the SDK's retryer and surface, if they persist, as errors that do not match
// eventstore.ErrConcurrency.
func (s *Store) Append(ctx context.Context, streamID string, expectedVersion int64, events ...eventstore.Event) ([]eventstore.Record, error) {
	if err := eventstore.ValidateAppend(streamID, expectedVersion, events, RecordSize); err != nil {
		return nil, err
	}
	stamped := eventstore.Stamp(events, s.now())
	records := make([]eventstore.Record, len(stamped))
	for i, e := range stamped {
		records[i] = eventstore.Record{StreamID: streamID, Version: expectedVersion + int64(i) + 1, Event: e}
	}
	var err error
	if len(records) == 1 {
		err = s.put(ctx, records[0])
	} else {
		err = s.transact(ctx, records)
	}
	if err != nil {
		return nil, err
	}
	return records, nil
}

func (s *Store) put(ctx context.Context, r eventstore.Record) error {
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.table),
		Item:                                EncodeRecord(r),
		ConditionExpression:                 condition,
		ExpressionAttributeNames:            conditionNames,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &failed):
		// An SDK retry of a put that did succeed finds its own event in place.
		if ownEvent(failed.Item, r) {
			return nil
		}
		return &eventstore.ConflictError{StreamID: r.StreamID, ExpectedVersion: r.Version - 1}
	default:
		return fmt.Errorf("dynamo: append to stream %q: %w", r.StreamID, err)
	}
}

// AppendStreams implements eventstore.MultiStreamStore with one TransactWriteItems
// holding every event of every stream, each Put conditional as in Append, with a
// ClientRequestToken so that the SDK's retries of the same request are idempotent. A
// failed condition becomes an *eventstore.ConflictError naming the stream of the
// first item whose condition failed, found from the cancellation reasons; throttling
// and server errors are handled as in Append.
func (s *Store) AppendStreams(ctx context.Context, appends ...eventstore.StreamAppend) ([]eventstore.Record, error) {
	if err := eventstore.ValidateAppendStreams(appends, RecordSize); err != nil {
		return nil, err
	}
	now := s.now()
	var records []eventstore.Record
	for _, a := range appends {
		for i, e := range eventstore.Stamp(a.Events, now) {
			records = append(records, eventstore.Record{StreamID: a.StreamID, Version: a.ExpectedVersion + int64(i) + 1, Event: e})
		}
	}
	if err := s.transact(ctx, records); err != nil {
		return nil, err
	}
	return records, nil
}

// transact writes records in one TransactWriteItems, every Put conditional on its
// version being free. The records may belong to several streams, each stream's
// records together and in version order, as Append and AppendStreams make them.
func (s *Store) transact(ctx context.Context, records []eventstore.Record) error {
	items := make([]types.TransactWriteItem, len(records))
	for i, r := range records {
		items[i] = types.TransactWriteItem{Put: &types.Put{
			TableName:                           aws.String(s.table),
			Item:                                EncodeRecord(r),
			ConditionExpression:                 condition,
			ExpressionAttributeNames:            conditionNames,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}}
	}
	token, err := requestToken()
	if err != nil {
		return err
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems:      items,
		ClientRequestToken: aws.String(token),
	}, retryThrottledTransactions)
	var canceled *types.TransactionCanceledException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &canceled):
		if conflicted(canceled.CancellationReasons) {
			if allOwn(canceled.CancellationReasons, records) {
				return nil
			}
			return conflictError(canceled.CancellationReasons, records)
		}
		return fmt.Errorf("dynamo: append to %s: transaction cancelled (%s): %w", streamNames(records), reasonCodes(canceled.CancellationReasons), err)
	default:
		return fmt.Errorf("dynamo: append to %s: %w", streamNames(records), err)
	}
}

// conflicted reports whether a transaction was cancelled because another writer holds
// or is writing one of its versions, as opposed to throttling or a validation error.
func conflicted(reasons []types.CancellationReason) bool {
	for _, r := range reasons {
		if conflictCode(r) {
			return true
		}
	}
	return false
}

func conflictCode(r types.CancellationReason) bool {
	switch aws.ToString(r.Code) {
	case "ConditionalCheckFailed", "TransactionConflict":
		return true
	}
	return false
}

// conflictError names the stream of the first item that failed for another writer's
// sake, preferring one whose version holds an event not its own (a retry that meets
// its own event in one stream is not what failed), and that stream's expected
// version. DynamoDB gives one reason per item, in the order of the items; if the
// reasons do not line up with the records it names the first stream.
func conflictError(reasons []types.CancellationReason, records []eventstore.Record) *eventstore.ConflictError {
	at := -1
	if len(reasons) == len(records) {
		for i, r := range reasons {
			if !conflictCode(r) {
				continue
			}
			if at < 0 {
				at = i
			}
			if aws.ToString(r.Code) != "ConditionalCheckFailed" || !ownEvent(r.Item, records[i]) {
				at = i
				break
			}
		}
	}
	first := max(at, 0) // then back to its stream's first record, whose version is one past the expected
	for first > 0 && records[first-1].StreamID == records[first].StreamID {
		first--
	}
	return &eventstore.ConflictError{StreamID: records[first].StreamID, ExpectedVersion: records[first].Version - 1}
}

// streamNames names the streams of records for an error message: `stream "a"`, or
// `streams "a", "b"`.
func streamNames(records []eventstore.Record) string {
	names := fmt.Sprintf("%q", records[0].StreamID)
	n := 1
	for i := 1; i < len(records); i++ {
		if records[i].StreamID != records[i-1].StreamID {
			names += fmt.Sprintf(", %q", records[i].StreamID)
			n++
		}
	}
	if n == 1 {
		return "stream " + names
	}
	return "streams " + names
}

// allOwn reports whether every version the transaction wanted already holds the very
// event it meant to write there: a retry of a transaction that succeeded after its
// idempotency token expired.
func allOwn(reasons []types.CancellationReason, records []eventstore.Record) bool {
	if len(reasons) != len(records) {
		return false
	}
	for i, r := range reasons {
		if aws.ToString(r.Code) != "ConditionalCheckFailed" || !ownEvent(r.Item, records[i]) {
			return false
		}
	}
	return true
}

func ownEvent(item map[string]types.AttributeValue, r eventstore.Record) bool {
	id, ok := item[schema.EventsEventID].(*types.AttributeValueMemberS)
	return ok && id.Value == r.ID
}

func reasonCodes(reasons []types.CancellationReason) string {
	codes := ""
	for i, r := range reasons {
		if i > 0 {
			codes += ","
		}
		codes += aws.ToString(r.Code)
	}
	return codes
}

// retryThrottledTransactions lets the SDK's retryer retry a transaction cancelled only
// because it was throttled, as it retries any other throttled request. The request
// keeps its ClientRequestToken, so a retry cannot apply it twice. The retryer keeps
// what the SDK asks of it besides (aws.RetryerV2: the adaptive mode's client-side
// rate limit, fed by throttles), as the SDK's own retry.AddWith… wrappers do: a
// wrapper that hid it would let transactions past the limit every other request
// keeps.
func retryThrottledTransactions(o *dynamodb.Options) {
	v2, ok := o.Retryer.(aws.RetryerV2)
	if !ok {
		v2 = initialTokens{o.Retryer}
	}
	o.Retryer = throttledTransactionRetryer{v2}
}

type throttledTransactionRetryer struct{ aws.RetryerV2 }

// initialTokens is an aws.Retryer that has no GetAttemptToken, given the one the
// SDK falls back on for it.
type initialTokens struct{ aws.Retryer }

func (r initialTokens) GetAttemptToken(context.Context) (func(error) error, error) {
	return r.GetInitialToken(), nil
}

func (r throttledTransactionRetryer) IsErrorRetryable(err error) bool {
	var canceled *types.TransactionCanceledException
	if errors.As(err, &canceled) && onlyThrottled(canceled.CancellationReasons) {
		return true
	}
	return r.RetryerV2.IsErrorRetryable(err)
}

func onlyThrottled(reasons []types.CancellationReason) bool {
	throttled := false
	for _, r := range reasons {
		switch aws.ToString(r.Code) {
		case "", "None":
		case "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
			throttled = true
		default:
			return false
		}
	}
	return throttled
}

func requestToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("dynamo: client request token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Read implements eventstore.Store with strongly consistent Query calls, following
// pagination until the stream's end.
func (s *Store) Read(ctx context.Context, streamID string, fromVersion int64) ([]eventstore.Record, error) {
	if err := eventstore.ValidateRead(streamID, fromVersion); err != nil {
		return nil, err
	}
	pages := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		ConsistentRead:           aws.Bool(true),
		KeyConditionExpression:   aws.String("#s = :s AND #v >= :v"),
		ExpressionAttributeNames: map[string]string{"#s": schema.EventsStreamID, "#v": schema.EventsVersion},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":s": &types.AttributeValueMemberS{Value: streamID},
			":v": &types.AttributeValueMemberN{Value: strconv.FormatInt(max(fromVersion, 1), 10)},
		},
	})
	var records []eventstore.Record
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("dynamo: read stream %q: %w", streamID, err)
		}
		for _, item := range page.Items {
			r, err := DecodeRecord(item)
			if err != nil {
				return nil, fmt.Errorf("dynamo: read stream %q: %w", streamID, err)
			}
			records = append(records, r)
		}
	}
	return records, nil
}

// ReadBackward implements eventstore.BackwardReader with strongly consistent Query
// calls in descending version order. A Query's Limit caps the items it evaluates, and
// a page also ends at 1 MB, so a page may come back short with more to read: it
// follows LastEvaluatedKey, asking each time for no more than are still wanted, until
// it has limit records or the stream's start.
func (s *Store) ReadBackward(ctx context.Context, streamID string, beforeVersion int64, limit int) ([]eventstore.Record, error) {
	if err := eventstore.ValidateReadBackward(streamID, beforeVersion, limit); err != nil {
		return nil, err
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		ConsistentRead:            aws.Bool(true),
		ScanIndexForward:          aws.Bool(false),
		KeyConditionExpression:    aws.String("#s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": schema.EventsStreamID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: streamID}},
	}
	if beforeVersion > 0 {
		in.KeyConditionExpression = aws.String("#s = :s AND #v < :v")
		in.ExpressionAttributeNames["#v"] = schema.EventsVersion
		in.ExpressionAttributeValues[":v"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(beforeVersion, 10)}
	}
	var records []eventstore.Record
	for {
		in.Limit = aws.Int32(int32(limit - len(records)))
		page, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("dynamo: read stream %q backward: %w", streamID, err)
		}
		for _, item := range page.Items {
			r, err := DecodeRecord(item)
			if err != nil {
				return nil, fmt.Errorf("dynamo: read stream %q backward: %w", streamID, err)
			}
			records = append(records, r)
		}
		if len(records) >= limit || len(page.LastEvaluatedKey) == 0 {
			return records[:min(len(records), limit)], nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
