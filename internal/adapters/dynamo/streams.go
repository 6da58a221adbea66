package dynamo

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// scanner is the optional capability StreamIDs needs on top of API. *dynamodb.Client
// has it; it is discovered rather than added to API so that request paths, and the
// fakes that stand in for DynamoDB there, never need it.
type scanner interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ scanner = (*dynamodb.Client)(nil)

// Limits of StreamIDs' parallelism.
const (
	DefaultScanSegments = 4
	MaxScanSegments     = 1_000_000 // DynamoDB's limit on TotalSegments
)

// ErrScanUnsupported is returned by StreamIDs when the store's client has no Scan
// method.
var ErrScanUnsupported = errors.New("dynamo: the store's client cannot Scan")

// StreamIDs calls fn once for every stream whose id starts with prefix (every
// stream for an empty prefix), in no particular order.
//
// It reads the whole Events table: a parallel Scan in segments segments
// (DefaultScanSegments when segments < 1), each item filtered by DynamoDB to the
// first event of a stream and projected to its stream id, so each stream is reported
// once however many events it holds. It is meant for rebuilds and other operator
// tools, never for request paths. The read is eventually consistent: a stream
// created while it runs may or may not be reported.
//
// fn is never called by two goroutines at once. If fn returns an error, StreamIDs
// stops scanning and returns that error; otherwise it returns the first Scan error,
// or nil once every segment has been read to its end. It returns ErrScanUnsupported
// if the store's client cannot Scan.
func (s *Store) StreamIDs(ctx context.Context, prefix string, segments int, fn func(streamID string) error) error {
	sc, ok := s.client.(scanner)
	if !ok {
		return fmt.Errorf("%w (client %T)", ErrScanUnsupported, s.client)
	}
	if segments < 1 {
		segments = DefaultScanSegments
	}
	if segments > MaxScanSegments {
		return fmt.Errorf("dynamo: %d scan segments: at most %d", segments, MaxScanSegments)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var (
		mu   sync.Mutex // serializes fn
		wg   sync.WaitGroup
		once sync.Once
		errc error
	)
	fail := func(err error) {
		once.Do(func() { errc = err; cancel(err) })
	}
	for segment := range segments {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.scanSegment(ctx, sc, prefix, int32(segment), int32(segments), func(id string) error {
				mu.Lock()
				defer mu.Unlock()
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
				if err := fn(id); err != nil {
					fail(err) // before unlocking, so that no other call of fn follows
					return err
				}
				return nil
			}); err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	return errc
}

func (s *Store) scanSegment(ctx context.Context, sc scanner, prefix string, segment, total int32, fn func(string) error) error {
	filter := "#v = :one"
	values := map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}
	if prefix != "" {
		filter = "begins_with(#s, :p) AND " + filter
		values[":p"] = &types.AttributeValueMemberS{Value: prefix}
	}
	pages := dynamodb.NewScanPaginator(sc, &dynamodb.ScanInput{
		TableName:                 aws.String(s.table),
		Segment:                   aws.Int32(segment),
		TotalSegments:             aws.Int32(total),
		ProjectionExpression:      aws.String("#s"),
		FilterExpression:          aws.String(filter),
		ExpressionAttributeNames:  map[string]string{"#s": schema.EventsStreamID, "#v": schema.EventsVersion},
		ExpressionAttributeValues: values,
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			if cause := context.Cause(ctx); cause != nil {
				return cause
			}
			return fmt.Errorf("dynamo: scan %s segment %d of %d: %w", s.table, segment, total, err)
		}
		for _, item := range page.Items {
			id, ok := item[schema.EventsStreamID].(*types.AttributeValueMemberS)
			if !ok {
				return fmt.Errorf("%w: scan %s: item without a string %s", eventstore.ErrCorruptRecord, s.table, schema.EventsStreamID)
			}
			if err := fn(id.Value); err != nil {
				return err
			}
		}
	}
	return nil
}
