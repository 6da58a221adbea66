package audit

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// DynamoAPI is the part of the DynamoDB client the audit uses: reads only.
// *dynamodb.Client has it.
type DynamoAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ DynamoAPI = (*dynamodb.Client)(nil)

// DefaultScanSegments is how many parallel segments a Dynamo scans a table in.
const DefaultScanSegments = 4

// Dynamo reads the Events table for an audit (the Deadlines table is read through
// its index, a deadlines.Index). It is safe for concurrent use and never writes.
type Dynamo struct {
	client   DynamoAPI
	events   string
	segments int
}

var _ EventsSource = (*Dynamo)(nil)

// DynamoOption configures a Dynamo.
type DynamoOption func(*Dynamo)

// WithScanSegments sets how many parallel segments each Scan uses (1 to 1,000,000,
// DynamoDB's limit); out-of-range values are clamped.
func WithScanSegments(n int) DynamoOption {
	return func(d *Dynamo) { d.segments = min(max(n, 1), dynamo.MaxScanSegments) }
}

// NewDynamo returns the source of an audit on the Events table eventsTable (see
// package schema).
func NewDynamo(client DynamoAPI, eventsTable string, opts ...DynamoOption) *Dynamo {
	d := &Dynamo{client: client, events: eventsTable, segments: DefaultScanSegments}
	for _, o := range opts {
		o(d)
	}
	return d
}

// StreamIDs implements EventsSource with a parallel Scan of the Events table that
// projects only the key attributes, following pagination: every item is seen, not
// only versions 1, so a stream that lacks its first version is listed too. Runs of
// items of one stream within a page are reported once. The Scan is eventually
// consistent: a stream created while it runs may or may not be listed.
func (d *Dynamo) StreamIDs(ctx context.Context, fn func(streamID string) error) error {
	names := map[string]string{"#s": schema.EventsStreamID, "#v": schema.EventsVersion}
	return scan(ctx, d, d.events, "#s, #v", names, func(item map[string]types.AttributeValue) (string, error) {
		id, ok := item[schema.EventsStreamID].(*types.AttributeValueMemberS)
		if !ok {
			return "", fmt.Errorf("%w: scan %s: an item without a string %s", eventstore.ErrCorruptRecord, d.events, schema.EventsStreamID)
		}
		return id.Value, nil
	}, fn)
}

// ReadStream implements EventsSource with strongly consistent Query calls on the
// Events table, following pagination, decoding each item with dynamo.DecodeRecord.
func (d *Dynamo) ReadStream(ctx context.Context, streamID string, fn func(Item) error) error {
	pages := dynamodb.NewQueryPaginator(d.client, &dynamodb.QueryInput{
		TableName:                 aws.String(d.events),
		ConsistentRead:            aws.Bool(true),
		KeyConditionExpression:    aws.String("#s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": schema.EventsStreamID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: streamID}},
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("query %s: %w", d.events, err)
		}
		for _, raw := range page.Items {
			if err := fn(decodeItem(streamID, raw)); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeItem turns an Events table item into an Item, whatever it holds.
func decodeItem(streamID string, raw map[string]types.AttributeValue) Item {
	it := Item{StreamID: streamID}
	if n, ok := raw[schema.EventsVersion].(*types.AttributeValueMemberN); ok {
		if v, err := strconv.ParseInt(n.Value, 10, 64); err == nil && v >= 1 {
			it.Version = v
		}
	}
	r, err := dynamo.DecodeRecord(raw)
	if err != nil {
		it.Err = err
		return it
	}
	if r.StreamID != streamID {
		it.Err = fmt.Errorf("%w: %s %q read from stream %q", eventstore.ErrCorruptRecord, schema.EventsStreamID, r.StreamID, streamID)
		return it
	}
	it.Record = r
	return it
}

// scan reads table in d.segments parallel segments, page by page, converting each
// item with conv and calling fn with the result, never from two goroutines at once,
// and skipping a value equal to the one just before it in the same page. It stops
// at the first error of conv, fn or DynamoDB and returns it.
func scan[T comparable](ctx context.Context, d *Dynamo, table, projection string, names map[string]string,
	conv func(map[string]types.AttributeValue) (T, error), fn func(T) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu     sync.Mutex // serializes fn
		wg     sync.WaitGroup
		once   sync.Once
		failed error
	)
	fail := func(err error) { once.Do(func() { failed = err; cancel(err) }) }
	for segment := range d.segments {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pages := dynamodb.NewScanPaginator(d.client, &dynamodb.ScanInput{
				TableName:                aws.String(table),
				Segment:                  aws.Int32(int32(segment)),
				TotalSegments:            aws.Int32(int32(d.segments)),
				ProjectionExpression:     aws.String(projection),
				ExpressionAttributeNames: names,
			})
			for pages.HasMorePages() {
				page, err := pages.NextPage(ctx)
				if err != nil {
					if cause := context.Cause(ctx); cause != nil {
						fail(cause)
						return
					}
					fail(fmt.Errorf("scan %s segment %d of %d: %w", table, segment, d.segments, err))
					return
				}
				var last T
				for i, item := range page.Items {
					v, err := conv(item)
					if err != nil {
						fail(err)
						return
					}
					if i > 0 && v == last {
						continue
					}
					last = v
					mu.Lock()
					if err := context.Cause(ctx); err != nil {
						fail(err)
						mu.Unlock()
						return
					}
					if err := fn(v); err != nil {
						fail(err) // before unlocking, so that no other call of fn follows
						mu.Unlock()
						return
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if failed != nil {
		return failed
	}
	return context.Cause(ctx) // a cancelled ctx may stop the paginators quietly
}
